(ns herald.feed.store.embedded.codec
  "Byte encodings of the embedded store's keys (big-endian, so byte order is numeric order) and values."
  (:import (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)
           (java.util Arrays)))

(set! *warn-on-reflection* true)

(def ^:private ^:const version
  "The first byte of every encoded value, for future format changes."
  1)

(defn long-key
  "8 bytes: one id."
  ^bytes [id]
  (-> (ByteBuffer/allocate 8) (.putLong (long id)) .array))

(defn pair-key
  "16 bytes: two ids (owner first, so one owner's entries are one key range)."
  ^bytes [a b]
  (-> (ByteBuffer/allocate 16) (.putLong (long a)) (.putLong (long b)) .array))

(defn feed-key
  "24 bytes: owner, inverted ts (so newest sorts first), post id."
  ^bytes [owner ts id]
  (-> (ByteBuffer/allocate 24) (.putLong (long owner)) (.putLong (- Long/MAX_VALUE (long ts)))
      (.putLong (long id)) .array))

(defn key-long
  "The long at byte offset off of key k."
  ^long [^bytes k off]
  (.getLong (ByteBuffer/wrap k) (int off)))

(defn feed-key-ts
  "The ts encoded in a feed key."
  ^long [^bytes k]
  (- Long/MAX_VALUE (key-long k 8)))

(defn owner-prefix?
  "True when key k starts with owner's 8 bytes."
  [^bytes k owner]
  (and (>= (alength k) 8) (= (long owner) (key-long k 0))))

(defn same-bytes?
  "Byte equality."
  [^bytes a ^bytes b]
  (Arrays/equals a b))

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(defn- get-string ^String [^ByteBuffer bb]
  (let [n (.getInt bb) bs (byte-array n)]
    (.get bb bs)
    (String. bs StandardCharsets/UTF_8)))

(defn encode-string
  "A value holding one string (a participant's name)."
  ^bytes [^String s]
  (let [bs (utf8 s)]
    (-> (ByteBuffer/allocate (inc (alength bs))) (.put (byte version)) (.put bs) .array)))

(defn decode-string
  "The string of a value made by encode-string."
  ^String [^bytes v]
  (String. v 1 (dec (alength v)) StandardCharsets/UTF_8))

(defn encode-post
  "A post's value: version, id, from, ts, then occurred, subject and story as length-prefixed UTF-8."
  ^bytes [{:keys [id from ts occurred subject story]}]
  (let [o (utf8 occurred) s (utf8 subject) t (utf8 story)
        bb (ByteBuffer/allocate (+ 1 24 12 (alength o) (alength s) (alength t)))]
    (-> bb (.put (byte version)) (.putLong (long id)) (.putLong (long from)) (.putLong (long ts))
        (.putInt (alength o)) (.put o) (.putInt (alength s)) (.put s) (.putInt (alength t)) (.put t))
    (.array bb)))

(defn decode-post
  "The post map of a value made by encode-post."
  [^bytes v]
  (let [bb (ByteBuffer/wrap v)]
    (.get bb)
    (let [id (.getLong bb) from (.getLong bb) ts (.getLong bb)
          occurred (get-string bb) subject (get-string bb) story (get-string bb)]
      {:from from :occurred occurred :subject subject :story story :id id :ts ts})))

(defn encode-fanout
  "A pending fan-out's value: the post's outbound key, then the recipient ids."
  ^bytes [^bytes outbound-key recipients]
  (let [bb (ByteBuffer/allocate (+ 1 24 4 (* 8 (count recipients))))]
    (-> bb (.put (byte version)) (.put outbound-key) (.putInt (count recipients)))
    (doseq [r recipients] (.putLong bb (long r)))
    (.array bb)))

(defn decode-fanout
  "[outbound-key recipients] of a value made by encode-fanout."
  [^bytes v]
  (let [bb (ByteBuffer/wrap v) k (byte-array 24)]
    (.get bb)
    (.get bb k)
    [k (vec (repeatedly (.getInt bb) #(.getLong bb)))]))

(defn tombstone
  "The posts entry of a deleted post: its outbound key (24 bytes) and a 25th byte, so it still orders and
  dates like a live entry (feed-key-ts) but names no outbound row."
  ^bytes [^bytes outbound-key]
  (let [v (Arrays/copyOf outbound-key 25)] (aset-byte v 24 1) v))

(defn tombstone?
  "True when the posts entry `v` is a tombstone."
  [^bytes v]
  (= 25 (alength v)))
