(ns herald.feed.store.embedded.lucene
  "Lucene for the embedded store's search: one NRT index of subject+story, sorted newest first."
  (:require [herald.feed.store.text :as text])
  (:import (java.io File)
           (java.nio.file Paths)
           (java.util ArrayList Arrays HashMap)
           (java.util.concurrent.atomic AtomicLong)
           (java.util.concurrent.locks ReentrantLock)
           (org.apache.lucene.document Document Field FieldType NumericDocValuesField)
           (org.apache.lucene.index DirectoryReader DocValues IndexOptions IndexWriter IndexWriterConfig
                                    IndexWriterConfig$OpenMode LeafReader LeafReaderContext NumericDocValues ReaderUtil
                                    SegmentInfos Term TieredMergePolicy)
           (org.apache.lucene.search BooleanClause$Occur BooleanQuery$Builder FieldDoc IndexSearcher
                                     IndexSortSortedNumericDocValuesRangeQuery Query ScoreDoc
                                     DocIdSetIterator SearcherFactory SearcherManager Sort SortField SortField$Type
                                     TermQuery TopFieldCollectorManager TopFieldDocs)
           (org.apache.lucene.store Directory NIOFSDirectory NRTCachingDirectory)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Sort newest-first
  "Highest post id first. Ids and :ts are assigned together under one lock (herald.feed.store.feeds/publish!), so id order
  is time order and the index needs no separate time field."
  (Sort. (into-array SortField [(SortField. "id" SortField$Type/LONG true)])))

(def ^:private ^FieldType text-type
  "Tokenized, documents only: no frequencies, positions or norms (hits are sorted by time, not scored)."
  (doto (FieldType.)
    (.setTokenized true)
    (.setIndexOptions IndexOptions/DOCS)
    (.setOmitNorms true)
    (.freeze)))

(def format-version
  "The index layout this code writes, recorded in every commit's user data under format-key. Bump it on
  any change of fields, doc-values types, analysis or index sort: an index of another (or no) version is
  rebuilt from RocksDB on open. 1 (unrecorded): `from` a StoredField; 2: `from` and `ts` numeric doc
  values, `id` a term; 3: `id` and `from` numeric doc values only (no id term, no ts: newest first is the
  highest id), the commit records watermark-key; 4: terms folded by herald.feed.store.text (Greek final
  sigma and tonos)."
  "4")

(def format-key "The commit user data key holding format-version." "herald.index.format")

(def watermark-key
  "The commit user data key holding the watermark: every post id up to it is in that commit (posts above it
  may be too; the store's catch-up on open checks them)."
  "herald.index.watermark")

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(defn- writer-config ^IndexWriterConfig [ram-mb ^IndexWriterConfig$OpenMode mode]
  (doto (IndexWriterConfig. text/analyzer)
    (.setOpenMode mode)
    (.setRAMBufferSizeMB (double ram-mb))
    ;; no compound files: they copy every flushed or small merged segment once more
    (.setUseCompoundFile false)
    ;; Lucene's default merge policy settings: a 2 MB floor (16 MB by default) cut the indexing CPU per post
    ;; by ~5% but made searches ~35% dearer (13 segments instead of 5 after 300,000 posts): no net gain
    ;; (interleaved micro-benchmark, bench/results/feed-profile-notes.md)
    (.setMergePolicy (doto (TieredMergePolicy.) (.setNoCFSRatio 0.0)))
    (.setIndexSort newest-first)
    ;; no merge-on-refresh: a reopen must not wait (up to 500 ms by default) for merges
    (.setMaxFullFlushMergeWaitMillis 0)))

(defn- commit-data
  "The user data of the last commit in d: nil when there is no index, or [:unreadable cause]."
  [^Directory d]
  (try
    (when (DirectoryReader/indexExists d)
      (into {} (.getUserData (SegmentInfos/readLatestCommit d))))
    (catch Exception e [:unreadable e])))

(defn index-format
  "The format version recorded in the last commit of the index in d: nil when there is no index, \"none\"
  when the commit records none (an index of a build before versioning), or [:unreadable cause]."
  [^Directory d]
  (let [data (commit-data d)]
    (cond (nil? data) nil
          (vector? data) data
          :else (get data format-key "none"))))

(defn- open-writer
  "An IndexWriter on d. An index of another format version, or one that cannot be read or opened, is
  replaced by an empty one (OpenMode CREATE; as a last resort its files are deleted), logged; the caller
  then rebuilds it from RocksDB. Returns [writer rebuilt-reason-or-nil watermark]."
  [^Directory d ^File dir ram-mb]
  (let [data (commit-data d)
        found (cond (nil? data) nil (vector? data) data :else (get data format-key "none"))
        reason (cond (nil? found) nil
                     (vector? found) (str "unreadable (" (ex-message (second found)) ")")
                     (not= found format-version) (str "format " found ", this build writes " format-version))
        watermark (or (when-not reason (some-> (get data watermark-key) parse-long)) 0)]
    (when reason
      (.warn log (str "search index in " dir " is " reason ": rebuilding it from the store")))
    (try
      [(IndexWriter. d (writer-config ram-mb (if reason IndexWriterConfig$OpenMode/CREATE
                                                 IndexWriterConfig$OpenMode/CREATE_OR_APPEND)))
       reason watermark]
      (catch Exception e
        (.warn log (str "cannot open the search index in " dir ": deleting and rebuilding it from the store") e)
        (doseq [^String f (.listAll d)] (.deleteFile d f))
        [(IndexWriter. d (writer-config ram-mb IndexWriterConfig$OpenMode/CREATE))
         (str "unopenable (" (ex-message e) ")") 0]))))

(defn open-index
  "Opens (creating if needed) the index in dir. ram-mb is IndexWriter's RAM buffer; max-lag-ms bounds how
  stale a search may be (see search). An index of another format version or an unreadable one is replaced
  by an empty one (see open-writer), :rebuilt then names why. Returns a map of :dir :writer :manager
  :rebuilt :watermark (of the last commit, 0 when none) and the counters used for refreshes."
  [dir ram-mb max-lag-ms]
  (let [;; NIOFS, not MMap: closing a reader of an mmapped segment closes a shared Arena, a handshake with
        ;; every JVM thread that took seconds on a loaded 2-core machine at each NRT reopen.
        ;; NRTCaching: small flushed segments stay in RAM until merged or committed.
        ^Directory d (NRTCachingDirectory. (NIOFSDirectory. (Paths/get (str dir) (make-array String 0))) 8.0 64.0)
        [^IndexWriter w reason watermark] (try (open-writer d (File. (str dir)) ram-mb)
                                               (catch Exception e (.close d) (throw e)))]
    ;; every commit, also the one of close, records the format and a watermark (commit! updates it)
    (.setLiveCommitData w (.entrySet (doto (HashMap.) (.put format-key format-version)
                                       (.put watermark-key (str watermark)))))
    {:dir d :writer w :manager (SearcherManager. w (SearcherFactory.)) :max-lag-ms (long max-lag-ms)
     :rebuilt reason :watermark (AtomicLong. watermark) :lock (ReentrantLock.)
     :write-gen (AtomicLong.) :refreshed-gen (AtomicLong.) :dirty-since (AtomicLong.) :refresh-lock (Object.)
     :uncommitted (AtomicLong.)}))

(defn- document ^Document [{:keys [id from] :as post}]
  (doto (Document.)
    (.add (NumericDocValuesField. "id" (long id)))
    (.add (NumericDocValuesField. "from" (long from)))
    (.add (Field. ^String text/field ^CharSequence (text/post-text post) text-type))))

(defn add-posts!
  "Adds the documents of posts (a non-empty collection) under the index lock: one writer thread at a time
  keeps one in-memory segment, so each refresh flushes one segment (not one per indexing thread) and merges
  have fewer, larger segments to combine. Plain addDocument calls (no delete term to resolve at every
  reopen; and no addDocuments: a block needs a parent field under an index sort): callers index each post
  id once (see the store's claims) and recovery checks ids-above. Returns nil; a failure throws ex-info
  {:added k} (the first k posts were added, post k failed) with the cause."
  [{:keys [^IndexWriter writer ^ReentrantLock lock ^AtomicLong write-gen ^AtomicLong dirty-since
           ^AtomicLong uncommitted] :as idx}
   posts]
  (let [posts (vec posts)
        docs (mapv document posts)
        ^java.util.Map edited (:edited idx)
        added (long (do (.lock lock)
                        (try
                          (loop [k 0]
                            (if (< k (count docs))
                              ;; a post an edit or delete took over while this batch waited (see replace-post!)
                              (if-let [e (when-not (and edited (.containsKey edited (:id (nth posts k))))
                                           (try (.addDocument writer (nth docs k)) nil (catch Exception e e)))]
                                (do (.addAndGet uncommitted k)
                                    (throw (ex-info (ex-message e) {:added k} e)))
                                (recur (inc k)))
                              k))
                          (finally
                            (.incrementAndGet write-gen)
                            (when (zero? (.get dirty-since)) (.compareAndSet dirty-since 0 (System/currentTimeMillis)))
                            (.unlock lock)))))]
    (.addAndGet uncommitted added)
    nil))

(defn ids-above
  "The set of post ids greater than w that have a document in the index as of the last refresh."
  [{:keys [^SearcherManager manager]} w]
  (let [^IndexSearcher s (.acquire manager)]
    (try
      (persistent!
       (reduce (fn [acc ^LeafReaderContext leaf]
                 (let [^LeafReader r (.reader leaf)
                       ^NumericDocValues dv (DocValues/getNumeric r "id")]
                   ;; the segment is sorted by id, highest first: stop at the first id <= w
                   (loop [acc acc]
                     (let [d (.nextDoc dv)]
                       (if (= d DocIdSetIterator/NO_MORE_DOCS)
                         acc
                         (let [id (.longValue dv)]
                           (if (> id (long w)) (recur (conj! acc id)) acc)))))))
               (transient #{}) (.leaves (.getIndexReader s))))
      (finally (.release manager s)))))

(defn refresh!
  "Makes every document added before generation g (default: now) visible to searches. Concurrent callers
  share one reopen. Returns nil."
  ([idx] (refresh! idx (.get ^AtomicLong (:write-gen idx))))
  ([{:keys [^SearcherManager manager ^AtomicLong write-gen ^AtomicLong refreshed-gen ^AtomicLong dirty-since
            refresh-lock]} g]
   (when (> (long g) (.get refreshed-gen))
     (locking refresh-lock
       (when (> (long g) (.get refreshed-gen))
         (let [g2 (.get write-gen)]
           (.set dirty-since 0)
           (.maybeRefreshBlocking manager)
           (.set refreshed-gen g2)))))
   nil))

(defn stale-ms
  "How long (ms) the oldest document not yet visible to searches has waited, 0 when none waits."
  ^long [{:keys [^AtomicLong dirty-since]}]
  (let [since (.get dirty-since)]
    (if (pos? since) (max 0 (- (System/currentTimeMillis) since)) 0)))

(defn- catch-up!
  "Before a search: refreshes when the searcher misses a document indexed max-lag-ms or more ago (any
  document when max-lag-ms is 0: read-your-writes)."
  [{:keys [^AtomicLong write-gen ^AtomicLong refreshed-gen ^long max-lag-ms] :as idx}]
  (let [g (.get write-gen)]
    (when (and (> g (.get refreshed-gen))
               (or (zero? max-lag-ms) (>= (stale-ms idx) max-lag-ms)))
      (refresh! idx g))))

(defn- query
  "Every term a MUST; the posts of the senders in `hidden` (ids, may be empty) a MUST_NOT on the `from` doc values
  (checked only for the documents the terms match)."
  [terms hidden]
  (let [b (BooleanQuery$Builder.)]
    (doseq [^String t terms] (.add b (TermQuery. (Term. ^String text/field t)) BooleanClause$Occur/MUST))
    (when (seq hidden)
      (.add b (NumericDocValuesField/newSlowSetQuery "from" (long-array hidden)) BooleanClause$Occur/MUST_NOT))
    (.build b)))

(defn- senders
  "The sender of each hit, in hit order, from the `from` doc values: hits are visited in doc id order so
  that each segment's doc values are read by one forward iterator."
  [^java.util.List leaves ^"[Lorg.apache.lucene.search.ScoreDoc;" hits]
  (let [n (alength hits)
        order (long-array n)
        out (long-array n)]
    ;; doc id in the high bits, hit position in the low 20 (limits are at most 10000)
    (dotimes [i n] (aset order i (bit-or (bit-shift-left (long (.-doc ^ScoreDoc (aget hits i))) 20) i)))
    (Arrays/sort order)
    (loop [i 0 leaf-ord -1 dv nil base 0]
      (when (< i n)
        (let [x (aget order i)
              doc (int (bit-shift-right x 20))
              pos (int (bit-and x 0xFFFFF))
              ord (long (ReaderUtil/subIndex doc leaves))
              same? (= ord leaf-ord)
              ^LeafReaderContext leaf (when-not same? (.get leaves ord))
              dv (if same? dv (DocValues/getNumeric (.reader leaf) "from"))
              base (if same? base (long (.-docBase leaf)))
              d (int (- doc base))]
          ;; advance, not advanceExact: the latter is declared on a package-private class Clojure cannot call
          (aset out pos (if (= d (.advance ^NumericDocValues dv d)) (.longValue ^NumericDocValues dv) 0))
          (recur (inc i) ord dv (long base)))))
    (vec out)))

(defn- top
  "(f leaves hits) over the newest n hits of the terms, below post id `below` when given (the index sort makes
  that a search-after on id)."
  [{:keys [^SearcherManager manager] :as idx} terms hidden n below f]
  (catch-up! idx)
  (let [^IndexSearcher s (.acquire manager)
        after (when below (FieldDoc. Integer/MAX_VALUE Float/NaN (object-array [(Long/valueOf (long below))])))]
    (try
      ;; hit-count threshold = n: each segment stops after n hits (its newest, by the index sort), instead of
      ;; counting up to 1,000 hits first for a total nobody reads
      (let [^TopFieldDocs top (.search s ^org.apache.lucene.search.Query (query terms hidden)
                                       (TopFieldCollectorManager. newest-first (int n) ^FieldDoc after (int n)))]
        (f (.leaves (.getIndexReader s)) (.-scoreDocs top)))
      (finally (.release manager s)))))

(defn search
  "Sender ids of the newest limit posts containing every term. Sees every document indexed max-lag-ms or
  more before the call (every document when max-lag-ms is 0)."
  [idx terms limit]
  (if (empty? terms) [] (top idx terms nil limit nil senders)))

(defn search-page
  "[{:id :from}] of the newest n posts containing every term with a post id below `below` (nil: any), none of a
  sender in `hidden` (a set of ids, or nil), as search."
  [idx terms n below hidden]
  (if (empty? terms)
    []
    (top idx terms hidden n below
         (fn [leaves ^"[Lorg.apache.lucene.search.ScoreDoc;" hits]
           (mapv (fn [h from] {:id (long (aget (.-fields ^FieldDoc h) 0)) :from from}) hits (senders leaves hits))))))

(defn commit!
  "Commits the index, recording watermark (every post id up to it is in this commit: the caller computes
  it before the call from the posts not yet added) unless it would go down. Skips the commit when
  nothing changed. Returns nil."
  [{:keys [^IndexWriter writer ^AtomicLong watermark ^AtomicLong uncommitted]} w]
  (let [w (max (long w) (.get watermark))
        n (.get uncommitted)]
    (when (or (pos? n) (not= w (.get watermark)) (.hasUncommittedChanges writer))
      (.setLiveCommitData writer (.entrySet (doto (HashMap.) (.put format-key format-version)
                                              (.put watermark-key (str w)))))
      (.commit writer)
      (.set watermark w)
      (.addAndGet uncommitted (- n)))
    nil))

(defn uncommitted
  "Documents added since the last commit started (an estimate while a commit runs)."
  ^long [{:keys [^AtomicLong uncommitted]}]
  (.get uncommitted))

(defn doc-count
  "Documents in the index (committed or not)."
  ^long [{:keys [^IndexWriter writer]}]
  (.numDocs (.getDocStats writer)))

(defn close-index!
  "Closes the searcher manager, the writer (committing what is left) and the directory."
  [{:keys [^SearcherManager manager ^IndexWriter writer ^Directory dir]}]
  (.close manager)
  (.close writer)
  (.close dir))

(defn open?
  "True while the writer is usable (false after close or a tragic error)."
  [{:keys [^IndexWriter writer]}]
  (.isOpen writer))

;; ---------------------------------------------------------------------------------------------------
;; edits and deletes (issue 11)

(defn- id-query
  "The documents of post `id`: a binary search of the index sort (highest id first) in each segment, with the
  doc values scan as the fallback where a segment is not sorted."
  ^Query [id]
  (IndexSortSortedNumericDocValuesRangeQuery. "id" (long id) (long id) (NumericDocValuesField/newSlowExactQuery "id" (long id))))

(defn replace-post!
  "Under the index lock: deletes the documents of post `id`, then adds the document of `(current)` (the post's
  version read now from the store, nil once it is deleted), and when `(take-over?)` is true marks `id` in
  `:edited` so that an indexing batch holding an older version of it skips it (add-posts!). Returns nil; throws
  what Lucene throws."
  [{:keys [^IndexWriter writer ^ReentrantLock lock ^AtomicLong write-gen ^AtomicLong dirty-since
           ^AtomicLong uncommitted] :as idx}
   id current take-over?]
  (.lock lock)
  (try
    (when (take-over?) (.put ^java.util.Map (:edited idx) (long id) Boolean/TRUE))
    (.deleteDocuments writer ^"[Lorg.apache.lucene.search.Query;" (into-array Query [(id-query id)]))
    (when-let [p (current)] (.addDocument writer (document p)))
    (.incrementAndGet uncommitted)
    nil
    (finally
      (.incrementAndGet write-gen)
      (when (zero? (.get dirty-since)) (.compareAndSet dirty-since 0 (System/currentTimeMillis)))
      (.unlock lock))))
