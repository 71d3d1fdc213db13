(ns herald.feed.store.embedded.rocks
  "RocksDB for the embedded store: opening the column families (one per data role) and small read helpers."
  (:require [clojure.java.io :as io])
  (:import (java.util ArrayList List)
           (org.rocksdb BlockBasedTableConfig BloomFilter ColumnFamilyDescriptor ColumnFamilyHandle
                        ColumnFamilyOptions CompressionType DBOptions FlushOptions LRUCache ReadOptions
                        RocksDB RocksIterator WriteBatch WriteOptions)))

(set! *warn-on-reflection* true)

(def families
  "The column families, one per role. Keys (ids are 8 bytes big-endian): participants id -> name;
  friendships id -> (a, b); friends (owner, other) -> friendship id; posts id -> outbound key; outbound
  (sender, inverted ts, post id) -> post; inbound (recipient, inverted ts, post id) -> sender (a reference:
  the post is read from outbound); fanout post id -> pending fan-out; search-pending: no longer written
  (builds before index format 3 marked each post not yet in a Lucene commit there; the store clears it on
  open: the Lucene commit's watermark replaced it). Relationships (issue 11): mutes (muter, target) and blocks
  (blocker, target) -> a marker, blocked-by (target, blocker) -> a marker; an unfriend deletes the two friends
  entries and keeps the friendships record (so friendship ids are never reused). Posts (issue 11): reindex (post
  id, seq) -> nothing: an edit or delete whose search index change is not in a Lucene commit yet (written with the
  edit, cleared after the commit); a deleted post's posts entry is a tombstone (its outbound key and one more byte);
  former (owner, other) -> a marker, both ways, written by the unfriend or block that ends a friendship: a later
  delete of a post of owner's also removes other's inbound copy of it (delivered while they were friends).
  Idempotency keys (issue 10): idem (owner, key bytes) -> the key record (herald.feed.store.embedded.keys), written
  in the post's own WriteBatch."
  [:participants :friendships :friends :posts :outbound :inbound :fanout :search-pending :mutes :blocks :blocked-by
   :reindex :former :idem])

(def ^:private feed-families #{:outbound :inbound})

(defn- cf-options ^ColumnFamilyOptions [family ^LRUCache cache write-buffer-mb closeables]
  (let [filter (BloomFilter. 10.0)
        table (doto (BlockBasedTableConfig.) (.setBlockCache cache) (.setFilterPolicy filter)
                (.setBlockSize (* 16 1024)))
        feed? (feed-families family)
        opts (doto (ColumnFamilyOptions.)
               (.setTableFormatConfig table)
               (.setCompressionType CompressionType/LZ4_COMPRESSION)
               (.setWriteBufferSize (* 1024 1024 (long (if feed? write-buffer-mb 8)))))]
    (swap! closeables conj filter opts)
    opts))

(defn- db-options ^DBOptions [sync?]
  (doto (DBOptions.)
    (.setCreateIfMissing true)
    (.setCreateMissingColumnFamilies true)
    (.setMaxBackgroundJobs 2)
    (.setEnablePipelinedWrite true)
    (.setBytesPerSync (* 1024 1024))
    (.setMaxTotalWalSize (* 128 1024 1024))
    (.setKeepLogFileNum 3)
    (.setUseFsync (boolean sync?))))

(defn open-db
  "Opens (creating if needed) RocksDB under dir. Returns {:db :cfs {family handle} :write-options
  :read-options :closeables}. opts: :sync? :block-cache-mb :write-buffer-mb (validated by the caller)."
  [dir {:keys [sync? block-cache-mb write-buffer-mb]}]
  (RocksDB/loadLibrary)
  (.mkdirs (io/file dir))
  (let [closeables (atom [])
        cache (LRUCache. (* 1024 1024 (long block-cache-mb)))
        names (cons :default families)
        ds (mapv (fn [f]
                   (ColumnFamilyDescriptor.
                    (if (= f :default) RocksDB/DEFAULT_COLUMN_FAMILY (.getBytes (name f) "UTF-8"))
                    (cf-options f cache write-buffer-mb closeables)))
                 names)
        descs (ArrayList. ^java.util.Collection ds)
        handles (ArrayList.)
        dbo (db-options sync?)
        db (RocksDB/open dbo (str dir) descs handles)]
    {:db db
     :cfs (zipmap names handles)
     :write-options (doto (WriteOptions.) (.setSync (boolean sync?)))
     :read-options (ReadOptions.)
     :closeables (into [cache dbo] @closeables)}))

(defn close-db!
  "Flushes memtables and the WAL, then closes the handles, the database and the options."
  [{:keys [^RocksDB db cfs ^WriteOptions write-options ^ReadOptions read-options closeables]}]
  (with-open [fo (doto (FlushOptions.) (.setWaitForFlush true))]
    (.flush db fo ^List (ArrayList. ^java.util.Collection (vals cfs))))
  (.flushWal db true)
  (doseq [^ColumnFamilyHandle h (vals cfs)] (.close h))
  (.close db)
  (.close write-options)
  (.close read-options)
  (doseq [^java.lang.AutoCloseable c closeables] (.close c)))

(defn get-bytes
  "The value of key k in family, or nil."
  ^bytes [{:keys [^RocksDB db cfs]} family ^bytes k]
  (.get db ^ColumnFamilyHandle (cfs family) k))

(defn multi-get
  "The values of keys ks in family, in order (nil where missing)."
  [{:keys [^RocksDB db cfs]} family ks]
  (let [h (cfs family)]
    (vec (.multiGetAsList db ^List (ArrayList. ^java.util.Collection (repeat (count ks) h))
                          ^List (ArrayList. ^java.util.Collection ks)))))

(defn put!
  "Puts one key (atomic and durable like write!)."
  [{:keys [^RocksDB db cfs ^WriteOptions write-options]} family ^bytes k ^bytes v]
  (.put db ^ColumnFamilyHandle (cfs family) write-options k v))

(defn delete!
  "Deletes one key."
  [{:keys [^RocksDB db cfs ^WriteOptions write-options]} family ^bytes k]
  (.delete db ^ColumnFamilyHandle (cfs family) write-options k))

(defn each!
  "Calls (f key value) on every entry of family in key order, from key start (inclusive) when given;
  returns nil."
  ([db family f] (each! db family nil f))
  ([{:keys [^RocksDB db cfs ^ReadOptions read-options]} family ^bytes start f]
   (with-open [^RocksIterator it (.newIterator db ^ColumnFamilyHandle (cfs family) read-options)]
     (if start (.seek it start) (.seekToFirst it))
     (while (.isValid it)
       (f (.key it) (.value it))
       (.next it)))))

(defn write!
  "Writes batch atomically with the store's write options (WAL always; fsync when :sync?)."
  [{:keys [^RocksDB db ^WriteOptions write-options]} ^WriteBatch batch]
  (.write db write-options batch))

(defn last-key
  "The greatest key of family, or nil when it is empty."
  ^bytes [{:keys [^RocksDB db cfs]} family]
  (with-open [it (.newIterator db ^ColumnFamilyHandle (cfs family))]
    (.seekToLast it)
    (when (.isValid it) (.key it))))

(defn scan
  "Up to n [key value] pairs of family from start (inclusive, or the first key when nil) while (keep? key)."
  [{:keys [^RocksDB db cfs ^ReadOptions read-options]} family ^bytes start keep? n]
  (with-open [^RocksIterator it (.newIterator db ^ColumnFamilyHandle (cfs family) read-options)]
    (if start (.seek it start) (.seekToFirst it))
    (loop [acc (transient [])]
      (if (and (< (count acc) (long n)) (.isValid it))
        (let [k (.key it)]
          (if (keep? k)
            (let [v (.value it)] (.next it) (recur (conj! acc [k v])))
            (persistent! acc)))
        (persistent! acc)))))
