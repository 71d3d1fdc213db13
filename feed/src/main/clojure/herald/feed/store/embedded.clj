(ns herald.feed.store.embedded
  "The embedded store: RocksDB for participants, the graph, feeds and fan-out; Lucene for search."
  (:require [clojure.java.io :as io]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.keys :as k]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.search :as search]
            [herald.feed.store.clock :as clock]
            [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.edits :as edits]
            [herald.feed.store.embedded.indexing :as ix]
            [herald.feed.store.embedded.keys :as keys]
            [herald.feed.store.embedded.lucene :as lucene]
            [herald.feed.store.embedded.pages :as pages]
            [herald.feed.store.embedded.relations :as rel]
            [herald.feed.store.embedded.rocks :as rocks])
  (:import (java.util Set)
           (java.util.concurrent ConcurrentHashMap ConcurrentSkipListMap Executors LinkedBlockingQueue
                                 ScheduledExecutorService ThreadFactory TimeUnit)
           (java.util.concurrent.atomic AtomicLong)
           (java.util.concurrent.locks ReentrantReadWriteLock)
           (org.rocksdb WriteBatch)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private stripes 256)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(defmacro ^:private guarded
  "Runs body under the read side of the close lock, after checking that the store is open.
  Expands inside EmbeddedStore methods (uses the fields rw and state)."
  [& body]
  `(let [l# (.readLock ~(with-meta 'rw {:tag `ReentrantReadWriteLock}))]
     (.lock l#)
     (try
       (when-not (:open? @~'state)
         (throw (ex-info "the store is closed" {:type :herald.feed.store/closed})))
       ~@body
       (finally (.unlock l#)))))

(defn- outbound-post [db ok]
  (some->> (rocks/get-bytes db :outbound ok) c/decode-post))

(defn- friendship [db a b]
  (some-> (rocks/get-bytes db :friends (c/pair-key a b)) (c/key-long 0)))

(defn- cf ^org.rocksdb.ColumnFamilyHandle [db family] (get-in db [:cfs family]))

(defn- befriend-locked [db ^AtomicLong ids a b]
  (rel/check-block! db a b)
  (if-let [id (friendship db a b)]
    {:id id :from a :to b :created? false}
    (let [id (.incrementAndGet ids)]
      (with-open [wb (WriteBatch.)]
        (.put wb (cf db :friendships) (c/long-key id) (c/pair-key a b))
        (.put wb (cf db :friends) (c/pair-key a b) (c/long-key id))
        (.put wb (cf db :friends) (c/pair-key b a) (c/long-key id))
        (rocks/write! db wb))
      {:id id :from a :to b :created? true})))

(defn- pair-lock
  "The stripe lock of the unordered pair a, b."
  [^objects locks a b]
  (aget locks (mod (hash [(min (long a) (long b)) (max (long a) (long b))]) stripes)))

(defn- publish-batch ^WriteBatch [db post recipients]
  (let [{:keys [id from ts]} post
        ok (c/feed-key from ts id)
        wb (WriteBatch.)]
    (.put wb (cf db :outbound) ok (c/encode-post post))
    (.put wb (cf db :posts) (c/long-key id) ok)
    (when (seq recipients) (.put wb (cf db :fanout) (c/long-key id) (c/encode-fanout ok recipients)))
    wb))

(defn- fan-out-batch!
  "Adds to wb the inbound upserts of post for every recipient and the completion of its fan-out record."
  [db ^WriteBatch wb post recipients]
  (let [{:keys [id from ts]} post
        v (c/long-key from)]
    ;; a post deleted meanwhile is not delivered (were a copy written in a race, it names no outbound row: unseen)
    (when-not (edits/deleted? db id)
      (doseq [r recipients] (.put wb (cf db :inbound) (c/feed-key r ts id) v)))
    (.delete wb (cf db :fanout) (c/long-key id))))

(defn- publish-with!
  "Assigns post its :id and :ts and writes it with its pending fan-out, plus what (extra! wb post) adds to the
  WriteBatch, in one atomic write; returns the post."
  [db idx ids ^AtomicLong last-ts post-lock post recipients extra!]
  (let [post (locking post-lock
               (let [id (.incrementAndGet ^AtomicLong (:post ids))]
                 (ix/track-unindexed! idx id)
                 (assoc post :id id :ts (clock/tick! last-ts))))]
    (try
      (with-open [wb (publish-batch db post recipients)]
        (extra! wb post)
        (rocks/write! db wb))
      (catch Throwable t (ix/untrack! idx (:id post)) (throw t)))
    (when (seq recipients) (.add ^Set (get-in db [:pending :fanout]) (:id post)))
    post))

(defn- pending
  "The in-memory set of post ids with a pending fan-out record: an exact count for the stats without
  iterating a family that fills with tombstones (one boxed id per pending post)."
  ^Set [db family]
  (get-in db [:pending family]))

(deftype EmbeddedStore [db idx ids ^AtomicLong last-ts post-lock ^objects locks rw state]
  graph/ParticipantStore
  (-create-participant! [_ name]
    (guarded
     (let [id (.incrementAndGet ^AtomicLong (:participant ids))]
       (rocks/put! db :participants (c/long-key id) (c/encode-string name))
       {:id id :name name})))
  (-participant [_ id]
    (guarded (some->> (rocks/get-bytes db :participants (c/long-key id)) c/decode-string (hash-map :id id :name))))

  graph/FriendStore
  (-befriend! [_ a b]
    (guarded
     (locking (pair-lock locks a b)
       (befriend-locked db (:friendship ids) a b))))
  (-friends [_ id]
    (guarded
     (mapv (fn [[k v]] {:id (c/key-long v 0) :from id :to (c/key-long k 8)})
           (rocks/scan db :friends (c/long-key id) #(c/owner-prefix? % id) Long/MAX_VALUE))))

  graph/Relations
  ;; each write under the pair's stripe lock, as -befriend!: a block and a befriend of one pair are serialized
  (-unfriend! [_ a b] (guarded (locking (pair-lock locks a b) (rel/unfriend! db a b))))
  (-mute! [_ a b] (guarded (locking (pair-lock locks a b) (rel/add! db :mutes a b))))
  (-unmute! [_ a b] (guarded (locking (pair-lock locks a b) (rel/remove! db :mutes a b))))
  (-mutes [_ id] (guarded (rel/others db :mutes id)))
  (-block! [_ a b] (guarded (locking (pair-lock locks a b) (rel/add! db :blocks a b))))
  (-unblock! [_ a b] (guarded (locking (pair-lock locks a b) (rel/remove! db :blocks a b))))
  (-blocks [_ id] (guarded (rel/others db :blocks id)))
  (-hidden [_ id] (guarded (rel/hidden db id)))

  search/SearchPages
  ;; the cursor's ts is the post's, from its key in :posts (the index holds ids only)
  (-search-page [_ keywords opts]
    (guarded (ix/search-page idx state keywords opts #(some-> (rocks/get-bytes db :posts (c/long-key %)) c/feed-key-ts))))

  feeds/OutboundStore
  (-publish! [_ post recipients]
    (guarded (publish-with! db idx ids last-ts post-lock post recipients (fn [_ _]))))
  (-outbound [_ sender opts] (guarded (pages/outbound-page db sender opts)))
  (-post [_ id] (guarded (edits/current-post db id)))

  k/KeyedPublish
  ;; under the key's stripe lock: of concurrent calls with one key, one publishes, the others find its record
  (-publish-keyed! [_ post recipients kr]
    (guarded
     (locking (aget locks (mod (hash [:idem (:owner kr) (:key kr)]) stripes))
       (if-let [r (keys/live db kr)]
         (assoc r :created? false)
         (let [r (volatile! nil)]
           (publish-with! db idx ids last-ts post-lock post recipients (fn [wb p] (vreset! r (keys/put! db wb kr p))))
           (assoc @r :created? true))))))
  (-purge-keys! [_ now] (guarded (keys/purge! db now)))

  feeds/InboundStore
  (-deliver! [_ recipient post]
    (guarded (rocks/put! db :inbound (c/feed-key recipient (:ts post) (:id post)) (c/long-key (:from post)))))
  (-fan-out! [_ post recipients]
    (guarded
     (with-open [wb (WriteBatch.)]
       (fan-out-batch! db wb post recipients)
       (rocks/write! db wb))
     (.remove (pending db :fanout) (:id post))))
  (-inbound [_ recipient opts] (guarded (pages/inbound-page db recipient opts)))
  (-pending-fanouts [_]
    (guarded
     (let [acc (volatile! [])]
       (rocks/each! db :fanout (fn [_ v] (let [[ok rs] (c/decode-fanout v)]
                                           (when-let [p (outbound-post db ok)]
                                             (vswap! acc conj {:post p :recipients rs})))))
       @acc)))
  (-complete-fanout! [_ post-id]
    (guarded (rocks/delete! db :fanout (c/long-key post-id)) (.remove (pending db :fanout) post-id) nil))

  feeds/BatchFanOut
  (-fan-out-all! [_ deliveries]
    (guarded
     ;; one write for the batch: one WAL append and one write group instead of one per post
     (with-open [wb (WriteBatch.)]
       (doseq [{:keys [post recipients]} deliveries] (fan-out-batch! db wb post recipients))
       (rocks/write! db wb))
     (doseq [{:keys [post]} deliveries] (.remove (pending db :fanout) (:id post)))))

  search/SearchIndex
  (-index! [_ post] (guarded (ix/index-posts! idx state [post]) nil))
  (-index-batch! [_ posts] (guarded (ix/index-posts! idx state posts) nil))
  (-search [_ keywords {:keys [limit]}] (guarded (ix/search idx state keywords limit)))
  (-refresh-search! [_] (guarded (lucene/refresh! idx)))

  feeds/PostEdits
  (-edit-post! [_ id changes]
    (guarded (edits/edit! db idx state (aget locks (mod (hash [:post id]) stripes)) id changes)))
  (-delete-post! [_ id]
    (guarded (edits/delete! db idx state (aget locks (mod (hash [:post id]) stripes)) id)))

  search/SearchEdits
  (-reindex! [_ post]
    (guarded (lucene/replace-post! idx (:id post) #(edits/current-post db (:id post)) (constantly false)) nil))
  (-unindex! [_ id] (guarded (lucene/replace-post! idx id (constantly nil) (constantly false)) nil))

  lifecycle/Lifecycle
  (-close! [_]
    (let [[old _] (swap-vals! state assoc :open? false)]
      (when (:open? old)
        (let [^ScheduledExecutorService ex (:scheduler old)]
          (.shutdown ex)
          (.awaitTermination ex 30 TimeUnit/SECONDS))
        (let [l (.writeLock ^ReentrantReadWriteLock rw)]
          (.lock l)
          (try
            (try (edits/commit-index! db idx state post-lock (:post ids)) (finally (lucene/close-index! idx)))
            (finally (rocks/close-db! db) (.unlock l)))))
      nil))
  (-ready? [_] (let [st @state] (boolean (and (:open? st) (not (:index-failure st)) (lucene/open? idx)))))
  (-stats [_]
    (guarded
     {:participants (.get ^AtomicLong (:participant ids)) :friendships (.get ^AtomicLong (:friendship ids))
      :posts (.get ^AtomicLong (:post ids))
      :pending-fanouts (.size (pending db :fanout))
      :search-pending (+ (.get ^AtomicLong (:unindexed-count idx)) (lucene/uncommitted idx))
      :indexed-posts (lucene/doc-count idx)
      :index-degraded (if (or (:index-failure @state) (not (lucene/open? idx))) 1 0)
      :index-errors (:index-errors @state 0)
      :search-errors (:search-errors @state 0)})))

;; ---------------------------------------------------------------------------------------------------
;; opening

(defn- last-id ^long [db family]
  (if-let [k (rocks/last-key db family)] (c/key-long k 0) 0))

(defn- last-ts ^long [db]
  (let [id (last-id db :posts)]
    (if (zero? id) 0 (c/feed-key-ts (rocks/get-bytes db :posts (c/long-key id))))))

(def ^:private rebuild-batch
  "Posts per Lucene call when the catch-up indexes many posts."
  256)

(defn- add-all!
  "Adds posts to Lucene in batches; a failure fails the open (the caller's catch-up)."
  [idx posts]
  (doseq [batch (partition-all rebuild-batch posts)] (lucene/add-posts! idx batch)))

(defn- catch-up-index!
  "Indexes the posts missing from the last Lucene commit: those above its watermark whose document is not
  in the index (a commit may hold posts above its watermark), or every post when the index is empty
  (deleted, never built, or replaced because of another format). Then commits (the watermark is the last
  post id), clears the search-pending markers of builds before format 3 and refreshes."
  [db idx post-ids]
  (let [t0 (System/nanoTime)
        w (.get ^AtomicLong (:watermark idx))
        rebuild? (and (zero? (lucene/doc-count idx)) (pos? (last-id db :posts)))
        n (volatile! 0)]
    (if rebuild?
      (let [batch (java.util.ArrayList.)]
        (rocks/each! db :outbound (fn [_ v]
                                    (.add batch (c/decode-post v))
                                    (when (= rebuild-batch (.size batch))
                                      (add-all! idx (vec batch)) (vswap! n + (.size batch)) (.clear batch))))
        (add-all! idx (vec batch))
        (vswap! n + (.size batch)))
      (let [present (lucene/ids-above idx w)
            missing (volatile! [])]
        (rocks/each! db :posts (c/long-key (inc w))
                     (fn [k ok] (when-not (present (c/key-long k 0))
                                  (when-let [p (outbound-post db ok)] (vswap! missing conj p)))))
        (add-all! idx @missing)
        (vreset! n (count @missing))))
    (let [k (edits/catch-up! db idx)]
      (when (pos? (long k)) (.info log (str "search index: " k " edits and deletes not committed before applied again"))))
    (when (or rebuild? (pos? (long @n)))
      (.info log (str "search index " (if rebuild? "rebuilt from the store: " "caught up: ") @n " posts in "
                      (quot (- (System/nanoTime) t0) 1000000) " ms"
                      (when-let [r (and rebuild? (:rebuilt idx))] (str " (the index found was " r ")")))))
    (lucene/commit! idx (.get ^AtomicLong post-ids))
    (with-open [wb (WriteBatch.)]
      (rocks/each! db :search-pending (fn [k _] (.delete wb (cf db :search-pending) ^bytes k)))
      (when (pos? (.count wb)) (rocks/write! db wb)))
    (edits/clear-markers! db)
    (lucene/refresh! idx)))

(defn- run-safely [state what f]
  (fn []
    (when (:open? @state)
      ;; a successful commit or refresh does not clear a degraded state: the next indexed post does
      (try (f) (catch Throwable e (ix/index-failed! state what e))))))

(defn- refresh-ms
  "The age of the oldest post not yet visible at which the background refresh runs: :index-refresh-ms, or
  by default 90% of :search-max-lag-ms (so that searches rarely wait for a refresh themselves), 1000 when
  the lag is 0 (searches then refresh before reading anyway)."
  ^long [{:keys [index-refresh-ms search-max-lag-ms]}]
  (long (or index-refresh-ms (if (pos? (long search-max-lag-ms)) (max 10 (quot (* 9 (long search-max-lag-ms)) 10)) 1000))))

(declare commit-index!)

(defn- index-tick
  "One look of the index scheduler: refreshes once the oldest post not visible to searches is `age` ms
  old, and commits when `commit-ms` have passed since the last commit, right after such a refresh or when
  no post waits for one (at the latest 2 x `commit-ms` after the last commit). A commit flushes Lucene's in-memory segment like a refresh does: aligned with the
  refresh, it finds it already flushed, so a commit adds no segment of its own (each segment written
  carries most of the vocabulary, then merges have one more to combine)."
  [idx state post-lock post-ids age commit-ms ^longs last-commit]
  (let [age (long age)
        commit-ms (long commit-ms)
        stale (lucene/stale-ms idx)
        refresh? (>= stale age)
        now (System/currentTimeMillis)]
    (when refresh?
      ((run-safely state "refreshing" #(lucene/refresh! idx))))
    (when (let [since (- now (aget last-commit 0))]
            (or (and (>= since commit-ms) (or refresh? (zero? stale))) (>= since (* 2 commit-ms))))
      (aset last-commit 0 now)
      ((run-safely state "committing" #(do (ix/retry-failed! idx state)
                                           (commit-index! idx state post-lock post-ids)))))))

(defn- commit-index! [idx state post-lock post-ids]
  (edits/commit-index! (:db idx) idx state post-lock post-ids))

(defn- start-scheduler [idx state post-lock post-ids {:keys [index-commit-ms] :as opts}]
  (let [ex (Executors/newSingleThreadScheduledExecutor
            (reify ThreadFactory
              (newThread [_ r] (doto (Thread. ^Runnable r "herald-feed-index") (.setDaemon true)))))
        age (refresh-ms opts)
        commit-ms (long index-commit-ms)
        tick (max 5 (min 100 (quot age 4) (quot commit-ms 4)))
        last-commit (long-array [(System/currentTimeMillis)])]
    ;; one refresh (a segment flush) per period of new posts, not a periodic one whatever the load; the
    ;; commit every :index-commit-ms, aligned with a refresh (at most `age` ms late)
    (.scheduleWithFixedDelay ex ^Runnable #(index-tick idx state post-lock post-ids age commit-ms last-commit)
                             tick tick TimeUnit/MILLISECONDS)
    ex))

(def ^:private defaults
  {:data-dir "data" :sync? false :block-cache-mb 64 :write-buffer-mb 32 :index-ram-mb 64
   :index-commit-ms 5000 :index-refresh-ms nil :search-max-lag-ms 1000})

(defn- validate [opts]
  (let [bad (fn [k what] (throw (ex-info (str k " must be " what ", got " (pr-str (get opts k)))
                                         {:type :herald.feed.store/invalid :key k :value (get opts k)})))]
    (when-not (and (string? (:data-dir opts)) (seq (:data-dir opts))) (bad :data-dir "a non-empty path string"))
    (when-not (boolean? (:sync? opts)) (bad :sync? "a boolean"))
    (doseq [k [:block-cache-mb :write-buffer-mb :index-ram-mb :index-commit-ms]]
      (when-not (and (int? (get opts k)) (pos? (long (get opts k)))) (bad k "a positive integer")))
    (when-not (or (nil? (:index-refresh-ms opts)) (and (int? (:index-refresh-ms opts)) (pos? (long (:index-refresh-ms opts)))))
      (bad :index-refresh-ms "a positive integer (or nil for the default)"))
    (when-not (and (int? (:search-max-lag-ms opts)) (<= 0 (long (:search-max-lag-ms opts)) 60000))
      (bad :search-max-lag-ms "an integer in 0..60000"))
    opts))

(defn embedded-store
  "Opens (creating if needed) the embedded store in :data-dir: RocksDB under <data-dir>/rocksdb, Lucene
  under <data-dir>/search. Search catches up with posts missing from the index before this returns.

  | key               | type    | default | meaning                                                       |
  |-------------------|---------|---------|---------------------------------------------------------------|
  | :data-dir         | string  | \"data\"  | the data directory                                            |
  | :sync?            | boolean | false   | fsync the WAL on every write (survives power loss, slower); without it an acknowledged write survives a process kill |
  | :block-cache-mb   | int     | 64      | RocksDB block cache shared by all column families             |
  | :write-buffer-mb  | int     | 32      | memtable size of each feed column family                      |
  | :index-ram-mb     | int     | 64      | Lucene IndexWriter RAM buffer                                  |
  | :index-commit-ms  | int     | 5000    | period of Lucene commits (each records the index watermark; posts above it are checked on open), taken right after a background refresh (at most 2 x this apart) |
  | :index-refresh-ms | int     | 90% of :search-max-lag-ms (1000 when the lag is 0) | the background searcher refresh runs once the oldest post not yet visible to searches is this old (a refresh flushes a segment: fewer is cheaper) |
  | :search-max-lag-ms | int    | 1000    | a search sees every post indexed at least this long before it; when the searcher lags more, the search refreshes it first. 0 is read-your-writes (a refresh, i.e. a small segment flush, per search after writes: costly under load) |"
  [config]
  (let [opts (validate (merge defaults (select-keys config (keys defaults))))
        dir (io/file (:data-dir opts))
        fail (fn [what e] (throw (ex-info (str "cannot open the " what " in " dir ": " (ex-message e))
                                          {:type :herald.feed.store/io :key :data-dir :value (str dir)} e)))
        db (try (rocks/open-db (io/file dir "rocksdb") opts) (catch Exception e (fail "RocksDB store" e)))
        db (assoc db :pending {:fanout (ConcurrentHashMap/newKeySet)} :deleted (ConcurrentHashMap/newKeySet))
        _ (rocks/each! db :fanout (fn [k _] (.add (pending db :fanout) (c/key-long k 0))))
        idx (try (lucene/open-index (io/file dir "search") (:index-ram-mb opts) (:search-max-lag-ms opts))
                 (catch Exception e (rocks/close-db! db) (fail "search index" e)))
        idx (edits/index-state
             (assoc idx :retry (LinkedBlockingQueue. 10000)
                    :unindexed (ConcurrentSkipListMap.) :unindexed-count (AtomicLong.) :db db))
        state (atom {:open? true})
        ids {:participant (AtomicLong. (last-id db :participants))
             :friendship (AtomicLong. (last-id db :friendships))
             :post (AtomicLong. (last-id db :posts))}
        post-lock (Object.)]
    (try
      (catch-up-index! db idx (:post ids))
      (catch Exception e (lucene/close-index! idx) (rocks/close-db! db) (fail "search index (catch-up)" e)))
    (swap! state assoc :scheduler (start-scheduler idx state post-lock (:post ids) opts))
    (EmbeddedStore. db idx ids (AtomicLong. (last-ts db)) post-lock
                    (object-array (repeatedly stripes #(Object.)))
                    (ReentrantReadWriteLock.) state)))
