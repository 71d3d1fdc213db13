(ns herald.feed.store.embedded.lucene
  "Lucene for the embedded store's search: one NRT index of subject+story, sorted newest first."
  (:require [herald.feed.store.text :as text])
  (:import (java.nio.file Paths)
           (java.util.concurrent ConcurrentLinkedQueue)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.lucene.document Document Field Field$Store FieldType NumericDocValuesField StoredField
                                       StringField)
           (org.apache.lucene.index IndexOptions IndexWriter IndexWriterConfig IndexWriterConfig$OpenMode Term)
           (org.apache.lucene.search BooleanClause$Occur BooleanQuery$Builder IndexSearcher ScoreDoc
                                     SearcherFactory SearcherManager Sort SortField SortField$Type TermQuery
                                     TopFieldDocs)
           (org.apache.lucene.store Directory FSDirectory)))

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

(defn open-index
  "Opens (creating if needed) the index in dir. ram-mb is IndexWriter's RAM buffer. Returns a map of
  :dir :writer :manager and the counters used for read-your-writes refreshes and marker clean-up."
  [dir ram-mb]
  (let [^Directory d (FSDirectory/open (Paths/get (str dir) (make-array String 0)))
        cfg (doto (IndexWriterConfig. text/analyzer)
              (.setOpenMode IndexWriterConfig$OpenMode/CREATE_OR_APPEND)
              (.setRAMBufferSizeMB (double ram-mb))
              (.setIndexSort newest-first))
        w (IndexWriter. d cfg)]
    {:dir d :writer w :manager (SearcherManager. w (SearcherFactory.))
     :write-gen (AtomicLong.) :refreshed-gen (AtomicLong.)
     :uncommitted (ConcurrentLinkedQueue.)}))

(defn- document ^Document [{:keys [id from ts] :as post}]
  (doto (Document.)
    (.add (StringField. "id" (Long/toString (long id)) Field$Store/NO))
    (.add (NumericDocValuesField. "ts" (long ts)))
    (.add (StoredField. "from" (long from)))
    (.add (Field. ^String text/field ^CharSequence (text/post-text post) text-type))))

(defn index-post!
  "Adds or replaces (by post id) the post's document."
  [{:keys [^IndexWriter writer ^AtomicLong write-gen ^ConcurrentLinkedQueue uncommitted]} post]
  (.updateDocument writer (Term. "id" (Long/toString (long (:id post)))) (document post))
  (.incrementAndGet write-gen)
  (.add uncommitted (:id post)))

(defn refresh!
  "Reopens the searcher if documents were added since the last refresh; returns nil."
  [{:keys [^SearcherManager manager ^AtomicLong write-gen ^AtomicLong refreshed-gen]}]
  (let [g (.get write-gen)]
    (when (> g (.get refreshed-gen))
      (.maybeRefreshBlocking manager)
      (.accumulateAndGet refreshed-gen g (reify java.util.function.LongBinaryOperator
                                           (applyAsLong [_ a b] (max a b)))))
    nil))

(defn- query [terms]
  (let [b (BooleanQuery$Builder.)]
    (doseq [^String t terms] (.add b (TermQuery. (Term. ^String text/field t)) BooleanClause$Occur/MUST))
    (.build b)))

(defn search
  "Sender ids of the newest limit posts containing every term (after a read-your-writes refresh)."
  [{:keys [^SearcherManager manager] :as idx} terms limit]
  (if (empty? terms)
    []
    (do
      (refresh! idx)
      (let [^IndexSearcher s (.acquire manager)]
        (try
          (let [^TopFieldDocs top (.search s (query terms) (int limit) newest-first)
                fields (.storedFields s)]
            (mapv (fn [^ScoreDoc sd]
                    (.longValue (.numericValue (.getField (.document fields (.-doc sd)) "from"))))
                  (.-scoreDocs top)))
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
