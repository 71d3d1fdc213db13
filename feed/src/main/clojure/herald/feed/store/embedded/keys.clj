(ns herald.feed.store.embedded.keys
  "The embedded store's idempotency key records (issue 10, herald.feed.store.keys): the `idem` column family,
  (owner, key) -> the record, written in the WriteBatch of the post it names."
  (:require [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.rocks :as rocks])
  (:import (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)
           (org.rocksdb WriteBatch)))

(set! *warn-on-reflection* true)

(defn record-key
  "The idem key of (owner, key): 8 bytes of owner, then the key's ASCII bytes."
  ^bytes [owner ^String key]
  (let [k (.getBytes key StandardCharsets/US_ASCII)]
    (-> (ByteBuffer/allocate (+ 8 (alength k))) (.putLong (long owner)) (.put k) .array)))

(defn- encode
  "A record's value: version 1, expires-at, the fingerprint (length-prefixed UTF-8), then the post (codec)."
  ^bytes [{:keys [post ^String fingerprint expires-at]}]
  (let [f (.getBytes fingerprint StandardCharsets/UTF_8) p (c/encode-post post)]
    (-> (ByteBuffer/allocate (+ 1 8 4 (alength f) (alength p)))
        (.put (byte 1)) (.putLong (long expires-at)) (.putInt (alength f)) (.put f) (.put p) .array)))

(defn- decode [^bytes v]
  (let [bb (ByteBuffer/wrap v)
        _ (.get bb)
        expires-at (.getLong bb)
        f (byte-array (.getInt bb))
        _ (.get bb f)
        p (byte-array (.remaining bb))]
    (.get bb p)
    {:post (c/decode-post p) :fingerprint (String. f StandardCharsets/UTF_8) :expires-at expires-at}))

(defn live
  "The record of key request `k` in `db` unless it expired at (:now k), or nil."
  [db {:keys [owner key now]}]
  (when-let [v (rocks/get-bytes db :idem (record-key owner key))]
    (let [r (decode v)] (when (> (long (:expires-at r)) (long now)) r))))

(defn put!
  "Adds to `wb` the record of key request `k` naming `post` (as stored); returns the record."
  [db ^WriteBatch wb k post]
  (let [r {:post post :fingerprint (:fingerprint k) :expires-at (:expires-at k)}]
    (.put wb ^org.rocksdb.ColumnFamilyHandle (get-in db [:cfs :idem]) (record-key (:owner k) (:key k)) (encode r))
    r))

(defn purge!
  "Deletes every record expired at `now` (one scan of the family, one write); returns how many."
  [db now]
  (with-open [wb (WriteBatch.)]
    (rocks/each! db :idem (fn [k v] (when (<= (long (:expires-at (decode v))) (long now))
                                      (.delete wb ^org.rocksdb.ColumnFamilyHandle (get-in db [:cfs :idem]) ^bytes k))))
    (when (pos? (.count wb)) (rocks/write! db wb))
    (.count wb)))
