(ns herald.feed.store.embedded.lucene
  "Lucene for the embedded store's search: one NRT index of subject+story, sorted newest first."
  (:require [herald.feed.store.text :as text])
  (:import (java.io File)
           (java.nio.file Paths)
           (java.util HashMap)
           (java.util.concurrent ConcurrentHashMap ConcurrentLinkedQueue)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.lucene.document Document Field Field$Store FieldType NumericDocValuesField StringField)
           (org.apache.lucene.index DirectoryReader DocValues IndexOptions SegmentInfos IndexWriter IndexWriterConfig IndexWriterConfig$OpenMode
                                    LeafReaderContext NumericDocValues ReaderUtil Term TieredMergePolicy)
           (org.apache.lucene.search BooleanClause$Occur BooleanQuery$Builder IndexSearcher ScoreDoc
                                     SearcherFactory SearcherManager Sort SortField SortField$Type TermQuery
                                     TopFieldDocs)
           (org.apache.lucene.store Directory NIOFSDirectory NRTCachingDirectory)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Sort newest-first
  (Sort. (into-array SortField [(SortField. "ts" SortField$Type/LONG true)])))

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
  rebuilt from RocksDB on open. 1 (unrecorded): `from` a StoredField; 2: `from` and `ts` numeric doc values."
  "2")

(def format-key "The commit user data key holding format-version." "herald.index.format")

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(defn- writer-config ^IndexWriterConfig [ram-mb ^IndexWriterConfig$OpenMode mode]
  (doto (IndexWriterConfig. text/analyzer)
    (.setOpenMode mode)
    (.setRAMBufferSizeMB (double ram-mb))
    ;; no compound files: they copy every flushed or small merged segment once more
    (.setUseCompoundFile false)
    (.setMergePolicy (doto (TieredMergePolicy.) (.setNoCFSRatio 0.0)))
    (.setIndexSort newest-first)
    ;; no merge-on-refresh: a reopen must not wait (up to 500 ms by default) for merges
    (.setMaxFullFlushMergeWaitMillis 0)))

(defn index-format
  "The format version recorded in the last commit of the index in d: nil when there is no index, \"none\"
  when the commit records none (an index of a build before versioning), or [:unreadable cause]."
  [^Directory d]
  (try
    (when (DirectoryReader/indexExists d)
      (or (get (.getUserData (SegmentInfos/readLatestCommit d)) format-key) "none"))
    (catch Exception e [:unreadable e])))

(defn- open-writer
  "An IndexWriter on d. An index of another format version, or one that cannot be read or opened, is
  replaced by an empty one (OpenMode CREATE; as a last resort its files are deleted), logged; the caller
  then rebuilds it from RocksDB. Returns [writer rebuilt-reason-or-nil]."
  [^Directory d ^File dir ram-mb]
  (let [found (index-format d)
        reason (cond (nil? found) nil
                     (vector? found) (str "unreadable (" (ex-message (second found)) ")")
                     (not= found format-version) (str "format " found ", this build writes " format-version))]
    (when reason
      (.warn log (str "search index in " dir " is " reason ": rebuilding it from the store")))
    (try
      [(IndexWriter. d (writer-config ram-mb (if reason IndexWriterConfig$OpenMode/CREATE
                                                 IndexWriterConfig$OpenMode/CREATE_OR_APPEND)))
       reason]
      (catch Exception e
        (.warn log (str "cannot open the search index in " dir ": deleting and rebuilding it from the store") e)
        (doseq [^String f (.listAll d)] (.deleteFile d f))
        [(IndexWriter. d (writer-config ram-mb IndexWriterConfig$OpenMode/CREATE))
         (str "unopenable (" (ex-message e) ")")]))))

(defn open-index
  "Opens (creating if needed) the index in dir. ram-mb is IndexWriter's RAM buffer; max-lag-ms bounds how
  stale a search may be (see search). An index of another format version or an unreadable one is replaced
  by an empty one (see open-writer), :rebuilt then names why. Returns a map of :dir :writer :manager
  :rebuilt and the counters used for refreshes and marker clean-up."
  [dir ram-mb max-lag-ms]
  (let [;; NIOFS, not MMap: closing a reader of an mmapped segment closes a shared Arena, a handshake with
        ;; every JVM thread that took seconds on a loaded 2-core machine at each NRT reopen.
        ;; NRTCaching: small flushed segments stay in RAM until merged or committed.
        ^Directory d (NRTCachingDirectory. (NIOFSDirectory. (Paths/get (str dir) (make-array String 0))) 8.0 64.0)
        [^IndexWriter w reason] (try (open-writer d (File. (str dir)) ram-mb)
                                     (catch Exception e (.close d) (throw e)))]
    (.setLiveCommitData w (.entrySet (doto (HashMap.) (.put format-key format-version))))
    {:dir d :writer w :manager (SearcherManager. w (SearcherFactory.)) :max-lag-ms (long max-lag-ms)
     :rebuilt reason
     :write-gen (AtomicLong.) :refreshed-gen (AtomicLong.) :dirty-since (AtomicLong.) :refresh-lock (Object.)
     :uncommitted (ConcurrentLinkedQueue.) :claimed (ConcurrentHashMap.)}))

(defn- document ^Document [{:keys [id from ts] :as post}]
  (doto (Document.)
    (.add (StringField. "id" (Long/toString (long id)) Field$Store/NO))
    (.add (NumericDocValuesField. "ts" (long ts)))
    (.add (NumericDocValuesField. "from" (long from)))
    (.add (Field. ^String text/field ^CharSequence (text/post-text post) text-type))))

(defn claim!
  "True for the one caller that claims post id for indexing until its claim is released (after a commit)."
  [{:keys [^ConcurrentHashMap claimed]} id]
  (nil? (.putIfAbsent claimed id Boolean/TRUE)))

(defn release-claims!
  "Drops the claims of ids (their documents are committed)."
  [{:keys [^ConcurrentHashMap claimed]} ids]
  (doseq [id ids] (.remove claimed id)))

(defn index-post!
  "Adds the post's document. Plain addDocument (no delete term per document to resolve at every reopen):
  callers make it idempotent by claiming the id first (see claim!) and by present-ids on recovery."
  [{:keys [^IndexWriter writer ^AtomicLong write-gen ^AtomicLong dirty-since ^ConcurrentLinkedQueue uncommitted]}
   post]
  (.addDocument writer (document post))
  (.incrementAndGet write-gen)
  (when (zero? (.get dirty-since)) (.compareAndSet dirty-since 0 (System/currentTimeMillis)))
  (.add uncommitted (:id post)))

(defn present-ids
  "The subset of post ids that have a document in the index as of the last refresh."
  [{:keys [^SearcherManager manager]} ids]
  (let [^IndexSearcher s (.acquire manager)]
    (try
      (into #{} (filter #(pos? (.count s (TermQuery. (Term. "id" (Long/toString (long %))))))) ids)
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

(defn- catch-up!
  "Before a search: refreshes when the searcher misses a document indexed max-lag-ms or more ago (any
  document when max-lag-ms is 0: read-your-writes)."
  [{:keys [^AtomicLong write-gen ^AtomicLong refreshed-gen ^AtomicLong dirty-since ^long max-lag-ms] :as idx}]
  (let [g (.get write-gen)]
    (when (and (> g (.get refreshed-gen))
               (or (zero? max-lag-ms)
                   (let [since (.get dirty-since)]
                     (and (pos? since) (>= (- (System/currentTimeMillis) since) max-lag-ms)))))
      (refresh! idx g))))

(defn- query [terms]
  (let [b (BooleanQuery$Builder.)]
    (doseq [^String t terms] (.add b (TermQuery. (Term. ^String text/field t)) BooleanClause$Occur/MUST))
    (.build b)))

(defn- sender
  "The sender of top-level document doc, from doc values (no stored-field block to decompress)."
  ^long [^java.util.List leaves doc]
  (let [^LeafReaderContext leaf (.get leaves (ReaderUtil/subIndex (int doc) leaves))
        ^NumericDocValues dv (DocValues/getNumeric (.reader leaf) "from")
        d (unchecked-subtract-int (int doc) (.-docBase leaf))]
    ;; advance, not advanceExact: the latter is declared on a package-private class Clojure cannot call
    (if (= d (.advance ^org.apache.lucene.search.DocIdSetIterator dv d)) (.longValue dv) 0)))

(defn search
  "Sender ids of the newest limit posts containing every term. Sees every document indexed max-lag-ms or
  more before the call (every document when max-lag-ms is 0)."
  [{:keys [^SearcherManager manager] :as idx} terms limit]
  (if (empty? terms)
    []
    (do
      (catch-up! idx)
      (let [^IndexSearcher s (.acquire manager)]
        (try
          (let [^TopFieldDocs top (.search s (query terms) (int limit) newest-first)
                leaves (.leaves (.getIndexReader s))]
            (mapv (fn [^ScoreDoc sd] (sender leaves (.-doc sd))) (.-scoreDocs top)))
          (finally (.release manager s)))))))

(defn commit!
  "Commits the index; returns the ids of the posts known to be in this commit (to clear their markers)."
  [{:keys [^IndexWriter writer ^ConcurrentLinkedQueue uncommitted]}]
  (let [ids (loop [acc (transient [])]
              (if-let [id (.poll uncommitted)] (recur (conj! acc id)) (persistent! acc)))]
    (.commit writer)
    ids))

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
