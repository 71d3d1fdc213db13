(ns herald.feed.store.scale
  "The :scale store: each data role on its own backend (PostgreSQL, Cassandra, OpenSearch, Redis, or memory),
  composed behind the role protocols of herald.feed.store; search is derived from the feeds' post log."
  (:require [herald.feed.store :as store]
            [herald.feed.store.scale.indexing :as ix]
            [herald.feed.store.scale.roles :as roles])
  (:import (java.util.concurrent Executors ScheduledExecutorService ThreadFactory TimeUnit)
           (java.util.concurrent.atomic AtomicBoolean)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(defmacro ^:private open-only
  "Runs body when the store is open (the field open?), else throws ex-info :herald.feed.store/closed."
  [& body]
  `(if (.get ~(with-meta 'open? {:tag `AtomicBoolean}))
     (do ~@body)
     (throw (ex-info "the store is closed" {:type :herald.feed.store/closed}))))

(def ^:private lifted-stats
  "Stats keys taken unprefixed from the role that owns them (so metrics and counters keep their names)."
  {:graph [:participants :friendships]
   :feeds [:posts :pending-fanouts]
   :search [:indexed-posts :index-degraded :index-errors :search-errors]})

(defn- role-stats
  "Every backend's stats prefixed by its role (the shared memory store's by memory-), plus the lifted keys."
  [{:keys [memory] :as backends}]
  (let [prefixed (fn [prefix m] (into {} (map (fn [[k v]] [(keyword (str prefix "-" (name k))) v])) m))
        per-role (into {} (for [r [:graph :feeds :search]] [r (store/-stats (get backends r))]))]
    (merge (when memory (prefixed "memory" (store/-stats memory)))
           (apply merge (for [r [:graph :feeds :search] :when (not (identical? memory (get backends r)))]
                          (prefixed (name r) (per-role r))))
           (apply merge (for [[r ks] lifted-stats] (select-keys (per-role r) ks))))))

(defn- distinct-backends
  "The backends to close / ask for readiness: each once, the cache too when it has a lifecycle."
  [{:keys [graph feeds search cache]}]
  (distinct (filter #(satisfies? store/Lifecycle %) [search feeds graph cache])))

(deftype ScaleStore [graph feeds search backends tracker ^AtomicBoolean open? ^ScheduledExecutorService marker]
  store/ParticipantStore
  (-create-participant! [_ name] (open-only (store/-create-participant! graph name)))
  (-participant [_ id] (open-only (store/-participant graph id)))

  store/FriendStore
  (-befriend! [_ a b] (open-only (store/-befriend! graph a b)))
  (-friends [_ id] (open-only (store/-friends graph id)))

  store/OutboundStore
  (-publish! [_ post recipients]
    (open-only
     (if-not tracker
       (store/-publish! feeds post recipients)
       (let [token (ix/publishing! tracker)]
         (try
           (ix/published! tracker token (store/-publish! feeds post recipients))
           (catch Throwable t (ix/abandoned! tracker token) (throw t)))))))
  (-outbound [_ sender opts] (open-only (store/-outbound feeds sender opts)))
  (-post [_ id] (open-only (store/-post feeds id)))

  store/InboundStore
  (-deliver! [_ recipient post] (open-only (store/-deliver! feeds recipient post)))
  (-fan-out! [_ post recipients] (open-only (store/-fan-out! feeds post recipients)))
  (-inbound [_ recipient opts] (open-only (store/-inbound feeds recipient opts)))
  (-pending-fanouts [_] (open-only (store/-pending-fanouts feeds)))
  (-complete-fanout! [_ post-id] (open-only (store/-complete-fanout! feeds post-id)))

  store/BatchFanOut
  (-fan-out-all! [_ deliveries]
    (open-only
     (if (store/batch-fan-out? feeds)
       (store/-fan-out-all! feeds deliveries)
       (doseq [{:keys [post recipients]} deliveries] (store/-fan-out! feeds post recipients)))))

  store/LoggedFeeds
  (-put-outbound! [_ post] (open-only (store/-put-outbound! feeds post)))
  (-deliver-all! [_ deliveries] (open-only (store/-deliver-all! feeds deliveries)))

  store/SearchIndex
  (-index! [_ post] (open-only (store/-index! search post) (some-> tracker (ix/indexed! [post])) nil))
  (-index-batch! [_ posts] (open-only (store/-index-batch! search posts) (some-> tracker (ix/indexed! posts)) nil))
  (-search [_ keywords opts] (open-only (store/-search search keywords opts)))
  (-refresh-search! [_] (open-only (store/-refresh-search! search)))

  store/Lifecycle
  (-close! [_]
    (when (.compareAndSet open? true false)
      (when marker
        (.shutdown marker)
        (.awaitTermination marker 10 TimeUnit/SECONDS)
        (try (ix/advance! tracker search)
             (catch Throwable t (.warn log (str "could not store the search mark on close: " (ex-message t))))))
      (let [errors (into [] (keep #(try (store/-close! %) nil (catch Throwable t t))) (distinct-backends backends))]
        (when-let [e (first errors)]
          (throw (ex-info (str "closing the :scale store failed: " (ex-message e))
                          {:type :herald.feed.store/io :errors (count errors)} e)))))
    nil)
  (-ready? [_] (and (.get open?) (every? store/-ready? (distinct-backends backends))))
  (-stats [_]
    (open-only
     (merge (role-stats backends)
            (when tracker {:search-pending (ix/waiting-count tracker)})
            (when-let [c (:cache backends)]
              (into {} (map (fn [[k v]] [(keyword (str "cache-" (name k))) v])) (store/-cache-stats c)))))))

;; issue 11: edits and deletes, each role's part (the feeds role's LoggedEdits, the search role's SearchEdits)
(extend-type ScaleStore
  store/LoggedEdits
  (-delete-outbound! [this post] (store/-delete-outbound! (.-feeds ^ScaleStore this) post))
  (-apply-changes! [this changes] (store/-apply-changes! (.-feeds ^ScaleStore this) changes))

  store/SearchEdits
  (-reindex! [this post] (store/-reindex! (.-search ^ScaleStore this) post))
  (-unindex! [this id] (store/-unindex! (.-search ^ScaleStore this) id))

  store/PostEdits
  ;; without a log outside the store (local events): the feeds role applies the change to every copy, then search
  (-edit-post! [this id changes]
    (when-let [p (store/-post (.-feeds ^ScaleStore this) id)]
      (let [p (merge p changes)]
        (store/-apply-changes! (.-feeds ^ScaleStore this) [{:edit p}])
        (store/-reindex! (.-search ^ScaleStore this) p)
        p)))
  (-delete-post! [this id]
    (when-let [p (store/-post (.-feeds ^ScaleStore this) id)]
      (store/-apply-changes! (.-feeds ^ScaleStore this) [{:delete p}])
      (store/-unindex! (.-search ^ScaleStore this) id)
      p)))

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
        {:keys [graph feeds search cache]} backends
        cached (roles/cached-graph graph cache)]
    (if (= :log (:search-progress opts))
      (ScaleStore. cached feeds search backends nil (AtomicBoolean. true) nil)
      (let [[m n] (try (ix/catch-up! feeds search (:catch-up-batch opts))
                       (catch Throwable t
                         (run! #(try (store/-close! %) (catch Throwable _ nil)) (distinct-backends backends))
                         (throw (ex-info (str "the :scale store could not bring search up to date: " (ex-message t))
                                         {:type :herald.feed.store/unavailable :key [:search]} t))))
            tracker (ix/tracker m)]
        (when (pos? (long n)) (.info log (str "the :scale store indexed " n " posts missing from search")))
        (ScaleStore. cached feeds search backends tracker (AtomicBoolean. true)
                     (start-marker tracker feeds search opts))))))
