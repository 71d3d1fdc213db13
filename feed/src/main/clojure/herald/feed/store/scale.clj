(ns herald.feed.store.scale
  "The :scale store: each data role on its own backend (PostgreSQL, Cassandra, OpenSearch, Redis, or memory),
  a map of roles (herald.feed.store.lifecycle/role-map); without a log, search is derived from the feeds' post log
  and its progress kept as a search mark."
  (:require [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.search :as search]
            [herald.feed.store.scale.indexing :as ix]
            [herald.feed.store.scale.roles :as roles])
  (:import (java.util.concurrent Executors ScheduledExecutorService ThreadFactory TimeUnit)
           (java.util.concurrent.atomic AtomicBoolean)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(deftype MarkProgress [tracker ^ScheduledExecutorService marker search]
  search/SearchProgress
  (-tracked-publish! [_ publish]
    (let [token (ix/publishing! tracker)]
      (try
        (if-some [post (publish)]
          (ix/published! tracker token post)
          (do (ix/abandoned! tracker token) nil))
        (catch Throwable t (ix/abandoned! tracker token) (throw t)))))
  (-indexed! [_ posts] (ix/indexed! tracker posts))

  lifecycle/Lifecycle
  (-close! [_]
    (.shutdown marker)
    (.awaitTermination marker 10 TimeUnit/SECONDS)
    (try (ix/advance! tracker search)
         (catch Throwable t (.warn log (str "could not store the search mark on close: " (ex-message t)))))
    nil)
  (-ready? [_] true)
  (-stats [_] {:search-pending (ix/waiting-count tracker)}))

(defn- distinct-backends
  "The backends to close / ask for readiness: each once, search first, the cache too when it has a lifecycle."
  [{:keys [graph feeds search cache]}]
  (distinct (filter #(satisfies? lifecycle/Lifecycle %) [search feeds graph cache])))

(def ^:private defaults {:index-mark-ms 1000 :index-retry-ms 30000 :catch-up-batch 500 :search-progress :mark})

(defn- validate [opts]
  (when-not (#{:mark :log} (:search-progress opts))
    (roles/invalid! [:search-progress] (:search-progress opts) "one of :mark :log"))
  (doseq [[k lo hi] [[:index-mark-ms 1 3600000] [:index-retry-ms 1 86400000] [:catch-up-batch 1 100000]]]
    (let [v (get opts k)]
      (when-not (and (int? v) (<= (long lo) (long v) (long hi)))
        (roles/invalid! [k] v (str "an integer in " lo ".." hi)))))
  opts)

(defn- mark-task
  "The periodic search work: index the posts that waited too long, then store the mark; failures are logged once
  per streak and retried on the next run."
  [tracker feeds search retry-ms]
  (let [failing (AtomicBoolean. false)]
    (fn []
      (let [errors (keep #(try (%) nil (catch Throwable t t))
                         [#(ix/retry-stale! tracker feeds search retry-ms) #(ix/advance! tracker search)])]
        (if-let [t (first errors)]
          (when (.compareAndSet failing false true)
            (.warn log (str "indexing waiting posts or storing the search mark failed (retried every period; "
                            "the posts stay above the mark and are indexed on the next open): " (ex-message t))))
          (when (.compareAndSet failing true false) (.info log "the search mark moves again")))))))

(defn- start-marker ^ScheduledExecutorService [tracker feeds search {:keys [index-mark-ms index-retry-ms]}]
  (doto (Executors/newSingleThreadScheduledExecutor
         (reify ThreadFactory
           (newThread [_ r] (doto (Thread. ^Runnable r "herald-feed-index-mark") (.setDaemon true)))))
    (.scheduleWithFixedDelay ^Runnable (mark-task tracker feeds search index-retry-ms)
                             (long index-mark-ms) (long index-mark-ms) TimeUnit/MILLISECONDS)))

(defn open
  "Opens the :scale store: each role on the backend its config names (see herald.feed.store.scale.spi), then
  indexes the posts of :feeds above the :search backend's mark (the catch-up, before this returns: an
  acknowledged post is searchable after a crash without anyone calling index! again).

  | key             | type | default          | meaning                                                        |
  |-----------------|------|------------------|----------------------------------------------------------------|
  | :graph          | map  | {:type :memory}  | participants and friends: {:type :postgres ...} (herald.feed.store.postgres/open) |
  | :feeds          | map  | {:type :memory}  | outbound, inbound, fan-out records: {:type :cassandra ...}     |
  | :search         | map  | {:type :memory}  | the search index: {:type :opensearch ...}                      |
  | :cache          | map  | {} (Caffeine)    | the participant / friend-list cache: {:type :redis ...} (herald.feed.store.redis/open), Caffeine options (herald.feed.store.cache/caffeine-cache), or {:max-size 0} for none |
  | :index-mark-ms  | int  | 1000             | how often the search mark (spi/-set-indexed-through!) is advanced |
  | :index-retry-ms | int  | 30000            | a published post not indexed this long after is indexed by the store itself (read back from :feeds) |
  | :catch-up-batch | int  | 500              | posts per -posts-after / -index-batch! call of the catch-up    |
  | :search-progress | keyword | :mark         | :mark: the search mark, its tracker and the catch-up above; :log: none of them, the index job's committed offsets on the Kafka log are the progress (herald.feed sets it when `:events` is Kafka) |

  Roles given {:type :memory} (or left out) share one in-memory store. An unknown :type, or a role config that
  is not a map, throws ex-info {:type :herald.feed.store/invalid :key [role :type]} before anything opens; a
  backend that cannot open throws with :key [role ...] and closes the roles already opened."
  [config]
  (let [opts (validate (merge defaults (select-keys config (keys defaults))))
        backends (roles/open-roles config (set (keys defaults)))
        {:keys [graph feeds search cache memory]} backends
        roles {:graph graph :feeds feeds :search search :cache cache :shared memory
               :backends (distinct-backends backends)}]
    (if (= :log (:search-progress opts))
      (lifecycle/role-map roles)
      (let [[m n] (try (ix/catch-up! feeds search (:catch-up-batch opts))
                       (catch Throwable t
                         (run! #(try (lifecycle/-close! %) (catch Throwable _ nil)) (distinct-backends backends))
                         (throw (ex-info (str "the :scale store could not bring search up to date: " (ex-message t))
                                         {:type :herald.feed.store/unavailable :key [:search]} t))))
            tracker (ix/tracker m)]
        (when (pos? (long n)) (.info log (str "the :scale store indexed " n " posts missing from search")))
        (lifecycle/role-map (assoc roles :progress (MarkProgress. tracker (start-marker tracker feeds search opts) search)))))))
