(ns herald.feed.store.opensearch
  "The :search role of the :scale store on OpenSearch (REST over HTTP, no client jar): SearchIndex,
  spi/IndexProgress and Lifecycle. See `open` for the options and docs/feed-scale-opensearch.md."
  (:require [clojure.string :as str]
            [herald.feed.outage :as outage]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.search :as search]
            [herald.feed.store.clock :as clock]
            [herald.feed.store.cursor :as cursor]
            [herald.feed.store.opensearch.http :as http]
            [herald.feed.store.opensearch.schema :as schema]
            [herald.feed.store.scale.spi :as spi])
  (:import (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------------------------------------------
;; options

(def defaults
  "The default options of `open`."
  {:url "http://127.0.0.1:9200" :index "herald-posts" :connect-timeout-ms 2000 :request-timeout-ms 30000
   :refresh-interval-ms 2000 :max-lag-ms nil :shards 1 :replicas 0 :bulk-size 500 :username nil :password nil})

(defn- invalid! [k v what]
  (throw (ex-info (str "opensearch option " k " must be " what ", got " (pr-str v))
                  {:type :herald.feed.store/invalid :key k :value v})))

(defn- check-int [opts k lo hi]
  (let [v (get opts k)]
    (when-not (and (int? v) (<= (long lo) (long v) (long hi)))
      (invalid! k v (str "an integer in " lo ".." hi)))))

(defn- valid-index-name?
  "OpenSearch's index name rules: lower case, not starting with - _ +, none of \\ / * ? \" < > | , # : or space,
  not . or .., at most 255 bytes."
  [s]
  (and (string? s) (not (str/blank? s)) (not (#{"." ".."} s))
       (= s (str/lower-case s))
       (not (re-find #"^[-_+]" s))
       (not (re-find #"[\\/*?\"<>|,#: ]" s))
       (<= (count (.getBytes ^String s "UTF-8")) 255)))

(defn check-options
  "opts merged over defaults, validated: an unknown key or a bad value throws
  ex-info {:type :herald.feed.store/invalid :key k :value v}."
  [opts]
  (when-not (or (nil? opts) (map? opts)) (invalid! :opensearch opts "a map of options"))
  (doseq [k (keys opts)]
    (when-not (contains? defaults k)
      (invalid! k (get opts k) (str "one of the known options " (pr-str (vec (sort (keys defaults))))))))
  (let [o (merge defaults opts)
        {:keys [url index max-lag-ms refresh-interval-ms]} o]
    (when-not (and (string? url) (re-matches #"https?://[^/\s]+/?" url))
      (invalid! :url url "an http:// or https:// URL of the server, without a path (\"http://127.0.0.1:9200\")"))
    (when-not (valid-index-name? index)
      (invalid! :index index "a valid OpenSearch index name (lower case, no \\ / * ? \" < > | , # : or space)"))
    (check-int o :connect-timeout-ms 1 600000)
    (check-int o :request-timeout-ms 1 3600000)
    (check-int o :shards 1 1024)
    (check-int o :replicas 0 16)
    (check-int o :bulk-size 1 100000)
    (when-not (or (= -1 refresh-interval-ms) (and (int? refresh-interval-ms) (<= 1 (long refresh-interval-ms) 3600000)))
      (invalid! :refresh-interval-ms refresh-interval-ms "-1 (no periodic refresh) or an integer in 1..3600000"))
    (doseq [k [:username :password]]
      (let [v (get o k)]
        (when-not (or (nil? v) (string? v))
          (throw (ex-info (str "opensearch option " k " must be a string or nil")
                          {:type :herald.feed.store/invalid :key k :value (if (= k :password) "<redacted>" v)})))))
    (cond (and (:username o) (nil? (:password o)))
          (invalid! :password nil "a string when :username is given (HTTP Basic authentication)")
          (and (:password o) (nil? (:username o)))
          (invalid! :username nil "a string when :password is given (HTTP Basic authentication)"))
    (when-not (or (nil? max-lag-ms) (and (int? max-lag-ms) (<= 0 (long max-lag-ms) 3600000)))
      (invalid! :max-lag-ms max-lag-ms "nil (the server's refresh interval only) or an integer in 0..3600000"))
    o))

;; ---------------------------------------------------------------------------------------------------
;; visibility: the client-side refresh that bounds the lag by :max-lag-ms

(defn- wrote!
  "Records a write acknowledged by the server (for the :max-lag-ms refresh before searches)."
  [{:keys [^AtomicLong write-gen ^AtomicLong dirty-since]}]
  (.incrementAndGet write-gen)
  (when (zero? (.get dirty-since)) (.compareAndSet dirty-since 0 (System/currentTimeMillis))))

(defn- refresh!
  "POST _refresh; afterwards every write acknowledged before the call is visible. Concurrent callers that need
  the same generation share one refresh."
  ([st] (refresh! st Long/MAX_VALUE))
  ([{:keys [client index ^AtomicLong write-gen ^AtomicLong refreshed-gen ^AtomicLong dirty-since refresh-lock]} g]
   (locking refresh-lock
     (when (or (= Long/MAX_VALUE (long g)) (> (long g) (.get refreshed-gen)))
       (let [g2 (.get write-gen)]
         (.set dirty-since 0)
         (http/request client "refresh" :post (str "/" index "/_refresh"))
         (.set refreshed-gen g2))))
   nil))

(defn- catch-up!
  "Before a search with :max-lag-ms set: refreshes when a write of this client acknowledged max-lag-ms or more ago
  (any write when 0: read-your-writes) may not be visible yet."
  [{:keys [max-lag-ms ^AtomicLong write-gen ^AtomicLong refreshed-gen ^AtomicLong dirty-since] :as st}]
  (when (some? max-lag-ms)
    (let [g (.get write-gen)
          since (.get dirty-since)]
      (when (and (> g (.get refreshed-gen))
                 (or (zero? (long max-lag-ms))
                     (and (pos? since) (>= (- (System/currentTimeMillis) since) (long max-lag-ms)))))
        (refresh! st g)))))

;; ---------------------------------------------------------------------------------------------------
;; the backend

(defmacro ^:private open-only
  "Runs body when the backend is open (its :open? AtomicBoolean), else throws :herald.feed.store/closed."
  [st & body]
  `(if (.get ^AtomicBoolean (:open? ~st))
     (do ~@body)
     (throw (ex-info "the OpenSearch search backend is closed" {:type :herald.feed.store/closed}))))

(defn- counting
  "Runs (f); on an exception increments the counter (and sets degraded when given) and rethrows; on success clears
  degraded. The server's reachability goes to the outage reporter: a success is ok!, an ::unavailable failure is
  reported and rethrown marked as reported (the HTTP layer logs no line of its own)."
  [reporter ^AtomicLong counter ^AtomicBoolean degraded f]
  (let [ep (outage/epoch reporter)]
    (try
      (let [r (f)]
        (some-> degraded (.set false))
        (outage/ok! reporter ep)
        r)
      (catch Throwable t
        (.incrementAndGet counter)
        (some-> degraded (.set true))
        (if (= ::unavailable (:type (ex-data t)))
          (do (outage/failed! reporter t ep)
              (throw (ex-info (ex-message t) (outage/reported (ex-data t) reporter) (ex-cause t))))
          (throw t))))))

(defn- bulk!
  "Indexes posts (at most :bulk-size) in one _bulk request, each at its :ts as external version (an item refused for
  a newer version is no failure); a failed item throws ex-info naming every failed post id (the items that succeeded
  stay indexed: indexing again is idempotent)."
  [{:keys [client index] :as st} posts]
  (let [[_ resp] (http/request client "bulk" :post (str "/" index "/_bulk") (schema/bulk-body posts :ts)
                               {:ndjson? true})
        failed (schema/bulk-failures resp)]
    (when (< (count failed) (count posts)) (wrote! st))
    (when (seq failed)
      (throw (ex-info (str "OpenSearch bulk indexing failed for " (count failed) " of " (count posts) " posts: "
                           (str/join "; " (map #(str "post " (:id %) " (" (:status %) " " (:error %) ")")
                                               (take 5 failed)))
                           (when (> (count failed) 5) "; ..."))
                      {:type ::bulk-failed :op "bulk" :failed failed
                       :error (:error (first failed))})))))

(defn- put-doc!
  "Indexes post's document at external version `v` (schema/versioned); a 409 (a newer version is indexed) is no error."
  [{:keys [client index]} post v]
  (http/request client "index" :put (str "/" index "/_doc/" (:id post) "?" (schema/versioned v)) (schema/document post)
                {:ok #{200 201 409}}))

(defrecord OpenSearchIndex [client index max-lag-ms bulk-size reporter ^AtomicBoolean open? ^AtomicBoolean degraded
                            ^AtomicLong index-errors ^AtomicLong search-errors ^AtomicLong write-gen
                            ^AtomicLong refreshed-gen ^AtomicLong dirty-since refresh-lock]
  search/SearchIndex
  (-index! [st post]
    (open-only st
      (counting reporter index-errors degraded
                #(do (put-doc! st post (:ts post))
                     (wrote! st)
                     nil))))
  (-index-batch! [st posts]
    (open-only st
      (counting reporter index-errors degraded
                #(run! (fn [chunk] (bulk! st chunk)) (partition-all bulk-size (vals (into (sorted-map) (map (juxt :id identity)) posts)))))
      nil))
  (-search [st keywords {:keys [limit]}]
    (open-only st
      (counting reporter search-errors nil
                #(do (catch-up! st)
                     (schema/senders
                      (second (http/request client "search" :post
                                            (str "/" index "/_search?filter_path=hits.hits.fields")
                                            (schema/search-body keywords limit))))))))
  (-refresh-search! [st]
    (open-only st (counting reporter index-errors degraded #(refresh! st))))

  search/SearchPages
  (-search-page [st keywords {:keys [limit before hidden]}]
    (open-only st
      (counting reporter search-errors nil
                #(do (catch-up! st)
                     (let [hs (schema/hits (second (http/request client "search" :post
                                                                 (str "/" index "/_search?filter_path=hits.hits.fields")
                                                                 (schema/search-page-body keywords (inc (long limit))
                                                                                          (some-> before cursor/decode) hidden))))
                           more? (> (count hs) (long limit))
                           shown (if more? (pop hs) hs)]
                       {:items shown :next (cursor/for-page shown more?)})))))

  spi/IndexProgress
  (-indexed-through [st]
    (open-only st
      (let [[status doc] (http/request client "indexed-through" :get
                                       (str "/" index "/_doc/" schema/progress-id "?_source_includes=indexed_through")
                                       nil {:ok #{200 404}})]
        (cond (and (= 200 status) (get doc "found")) (long (get-in doc ["_source" "indexed_through"] 0))
              ;; 404 for the document is {"found": false}; for the index itself it carries an error
              (get doc "error") (throw (ex-info (str "OpenSearch indexed-through failed: index " index " is missing")
                                                {:type ::http-error :op "indexed-through" :status status
                                                 :error (str (get-in doc ["error" "type"]) ": "
                                                             (get-in doc ["error" "reason"]))}))
              :else 0))))
  (-set-indexed-through! [st ts]
    (open-only st
      (http/request client "set-indexed-through" :put (str "/" index "/_doc/" schema/progress-id)
                    {"indexed_through" (long ts)})
      nil))

  lifecycle/Lifecycle
  (-close! [_]
    ;; the client's selector thread ends once requests in flight are done (HttpClient is AutoCloseable on JDK 21+)
    (when (.compareAndSet open? true false) (.close ^java.net.http.HttpClient (:http client)))
    nil)
  (-ready? [_]
    (and (.get open?)
         (not (.get degraded))
         (try (let [[_ h] (http/request client "health" :get (str "/_cluster/health/" index "?timeout=1s")
                                        nil {:timeout-ms (:connect-timeout-ms client 2000)})]
                (contains? #{"green" "yellow"} (get h "status")))
              (catch Exception _ false))))
  (-stats [_]
    (merge {:index-degraded (if (.get degraded) 1 0)
            :index-errors (.get index-errors)
            :search-errors (.get search-errors)}
           (when (.get open?)
             (try {:indexed-posts (long (get (second (http/request client "count" :post (str "/" index "/_count")
                                                                  schema/count-body {:timeout-ms 2000}))
                                             "count"))}
                  (catch Exception _ nil))))))

(defn- ensure-index!
  "Creates the index with schema/index-body unless it exists; an existing index must carry a format of
  schema/open-formats. Then waits (up to the request timeout) for its primary shard."
  [client index opts]
  (let [[status] (http/request client "open" :head (str "/" index) nil {:ok #{200 404}})]
    (when (= 404 status)
      (try (http/request client "create-index" :put (str "/" index) (schema/index-body opts))
           (catch clojure.lang.ExceptionInfo e
             ;; created by someone else meanwhile: fine, checked below
             (when-not (str/includes? (str (:error (ex-data e))) "resource_already_exists_exception")
               (throw e)))))
    (let [[_ m] (http/request client "open" :get (str "/" index "/_mapping"))
          found (get-in m [index "mappings" "_meta" "herald_format"])]
      (when-not (contains? schema/open-formats found)
        (throw (ex-info (str "OpenSearch index " index " has herald format " (pr-str found) ", this build writes "
                             schema/format-version " (and opens " (str/join ", " (sort schema/open-formats))
                             "): delete the index (it is rebuilt from the feeds) or pick another :index")
                        {:type ::incompatible-index :key :index :value index :found found}))))
    (http/request client "open" :get (str "/_cluster/health/" index "?wait_for_status=yellow&timeout="
                                          (max 1 (quot (long (:request-timeout-ms opts)) 1000)) "s"))))

(defn open
  "Opens the search backend on an OpenSearch server, creating the index (with its analyzer and mapping, see
  herald.feed.store.opensearch.schema/index-body) when it does not exist, and waiting for it to be usable.

  | key                  | type   | default                 | meaning                                                   |
  |----------------------|--------|-------------------------|-----------------------------------------------------------|
  | :url                 | string | \"http://127.0.0.1:9200\" | the server's base URL (http or https, no path)             |
  | :index               | string | \"herald-posts\"          | the index name (created on open)                          |
  | :connect-timeout-ms  | int    | 2000                    | TCP connect timeout                                       |
  | :request-timeout-ms  | int    | 30000                   | timeout of each request (also the wait for the index on open) |
  | :refresh-interval-ms | int    | 2000                    | the index's refresh_interval when it is created: the visibility lag; -1 = none |
  | :max-lag-ms          | int    | nil                     | if set, a search first refreshes when a write of THIS client older than this may be invisible (0 = read-your-writes); nil: the refresh interval alone bounds the lag |
  | :shards              | int    | 1                       | number_of_shards when the index is created                |
  | :replicas            | int    | 0                       | number_of_replicas when the index is created              |
  | :bulk-size           | int    | 500                     | posts per _bulk request of index-batch!                   |
  | :username            | string | nil                     | HTTP Basic authentication (the security plugin's users), with :password |
  | :password            | string | nil                     | never printed: the header is kept in a redacted wrapper   |

  Errors: bad options throw {:type :herald.feed.store/invalid :key k}; an unreachable server
  {:type ::unavailable}; an error status {:type ::http-error :status n :error \"server text\"}; an index of
  another layout {:type ::incompatible-index}. A failed item of a bulk request throws {:type ::bulk-failed
  :failed [{:id :status :error}]} after the other items were indexed. An outage (::unavailable on index, search or
  refresh) is logged by herald.feed.outage: a line when the server goes down, a summary every 10 s while it stays
  down, a line when a call succeeds again."
  [opts]
  (let [{:keys [url index connect-timeout-ms request-timeout-ms max-lag-ms bulk-size username password] :as o}
        (check-options opts)
        client (assoc (http/client url connect-timeout-ms request-timeout-ms
                                   (when username (http/basic-auth username password)))
                      :connect-timeout-ms connect-timeout-ms)]
    (ensure-index! client index o)
    (map->OpenSearchIndex
     {:client client :index index :max-lag-ms max-lag-ms :bulk-size bulk-size :open? (AtomicBoolean. true)
      :reporter (outage/reporter (str "opensearch " (str/replace url #"//[^@/]*@" "//")))
      :degraded (AtomicBoolean. false) :index-errors (AtomicLong.) :search-errors (AtomicLong.)
      :write-gen (AtomicLong.) :refreshed-gen (AtomicLong.) :dirty-since (AtomicLong.) :refresh-lock (Object.)})))

;; issue 11: a post's document replaced (an edit) or removed (a delete)
(extend-type OpenSearchIndex
  search/SearchEdits
  (-reindex! [st post]
    (let [{:keys [reporter index-errors degraded]} st]
      (open-only st
        (counting reporter index-errors degraded
                  #(do (put-doc! st post (clock/edit-version post)) (wrote! st) nil)))))
  (-unindex! [st id]
    (let [{:keys [client index reporter index-errors degraded]} st]
      (open-only st
        (counting reporter index-errors degraded
                  ;; at now as external version: an indexing batch still holding the post is refused afterwards (for
                  ;; index.gc_deletes, 60 s: see docs/feed-scale-opensearch.md)
                  #(do (http/request client "unindex" :delete
                                     (str "/" index "/_doc/" id "?" (schema/versioned (clock/now-micros))) nil
                                     {:ok #{200 404 409}})
                       (wrote! st)
                       nil))))))
