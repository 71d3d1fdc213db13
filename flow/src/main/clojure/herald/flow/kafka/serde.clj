(ns herald.flow.kafka.serde
  "Serdes of the Kafka Streams runtime: segments as EDN text or herald's binary codec, group keys, and window state."
  (:require [herald.flow.impl.types :as t])
  (:import (herald.flow.log RecordCodec)
           (java.io ByteArrayInputStream ByteArrayOutputStream ObjectInputStream ObjectOutputStream)
           (java.nio ByteBuffer)
           (java.util HashMap)
           (org.HdrHistogram Histogram)
           (java.nio.charset StandardCharsets)
           (org.apache.kafka.common.serialization Deserializer Serde Serdes Serializer)))

(set! *warn-on-reflection* true)

(defrecord Undecodable [^bytes bytes ^Throwable error])

(defn undecodable?
  "True for what a segment deserializer returns for bytes it could not read (the input task reports it as an error)."
  [x]
  (instance? Undecodable x))

(defn- serde ^Serde [enc dec]
  (Serdes/serdeFrom (reify Serializer (serialize [_ _ x] (enc x)))
                    (reify Deserializer (deserialize [_ _ b] (dec b)))))

(defn- edn-bytes ^bytes [x]
  (let [^String s (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false]
                    (pr-str x))]
    (.getBytes s StandardCharsets/UTF_8)))

(defn- safe-decode
  "Decodes EDN text or the binary codec; bytes it cannot read become an Undecodable instead of an exception."
  [^bytes b]
  (when b
    (try (RecordCodec/decode b)
         (catch Exception e (->Undecodable b e)))))

(def edn
  "Segments as EDN text (readable by any EDN reader); reading also accepts the binary codec."
  (serde (fn [x] (when (some? x) (edn-bytes x))) safe-decode))

(def codec
  "Segments in herald's tagged binary codec (`herald.flow.log.RecordCodec`): compact, used on internal topics."
  (serde (fn [x] (when (some? x) (RecordCodec/encode x))) safe-decode))

(def group
  "Group keys of repartition topics: every value (nil too) in the binary codec, so equal groups hash to one partition."
  (serde (fn [x] (RecordCodec/encode x)) (fn [^bytes b] (when b (RecordCodec/decode b)))))

(def output-key
  "Keys of output topics: nil stays a null key, anything else is EDN text."
  (serde (fn [x] (when (some? x) (edn-bytes x))) safe-decode))

(def ignored-key
  "The keys of input topics: read as raw bytes and never interpreted."
  (Serdes/ByteArray))

(defn- java-bytes ^bytes [x]
  (let [bo (ByteArrayOutputStream. 256)]
    (with-open [o (ObjectOutputStream. bo)] (.writeObject o x))
    (.toByteArray bo)))

(defn- java-object [^bytes b]
  (when b (with-open [i (ObjectInputStream. (ByteArrayInputStream. b))] (.readObject i))))

(def ^:private hdr-tag ::hdr)
(def ^:private hash-map-tag ::hash-map)

(defn- plain?
  "True for what RecordCodec writes and reads back as it was (so not records, sorted or lazy collections)."
  [x]
  (or (nil? x) (instance? Boolean x) (instance? Long x) (instance? Double x) (string? x) (keyword? x) (symbol? x)
      (instance? clojure.lang.PersistentArrayMap x) (instance? clojure.lang.PersistentHashMap x)
      (instance? clojure.lang.PersistentVector x) (instance? clojure.lang.PersistentHashSet x)))

(defn- histogram-bytes ^bytes [^Histogram h]
  (let [bb (ByteBuffer/allocate (.getNeededByteBufferCapacity h))]
    (.encodeIntoByteBuffer h bb)
    (java.util.Arrays/copyOf (.array bb) (.position bb))))

(defn- to-data
  "`x` as data RecordCodec writes exactly: an HdrHistogram `Histogram` becomes `{::hdr [bytes auto-resize?]}`
  (its own encoding: counts, range, precision; not its start/end time stamps), a java.util.HashMap `{::hash-map {k v}}`; ::none when `x` holds anything else."
  [x]
  (letfn [(walk [x]
            (cond (= Histogram (class x)) {hdr-tag [(histogram-bytes x) (.isAutoResize ^Histogram x)]}
                  (= HashMap (class x)) {hash-map-tag (walk (into {} x))}
                  (not (plain? x)) (throw (ex-info "not plain" {::none true}))
                  (map? x) (persistent! (reduce-kv (fn [m k v] (assoc! m (walk k) (walk v))) (transient {}) x))
                  (vector? x) (mapv walk x)
                  (set? x) (into #{} (map walk) x)
                  :else x))]
    (try (walk x) (catch clojure.lang.ExceptionInfo e (if (::none (ex-data e)) ::none (throw e))))))

(defn- from-data
  "The inverse of `to-data`."
  [x]
  (cond (map? x) (cond (contains? x hdr-tag)
                       (let [[b auto?] (get x hdr-tag)]
                         (doto (Histogram/decodeFromByteBuffer (ByteBuffer/wrap ^bytes b) 0) (.setAutoResize (boolean auto?))))
                       (contains? x hash-map-tag) (HashMap. ^java.util.Map (from-data (get x hash-map-tag)))
                       :else (persistent! (reduce-kv (fn [m k v] (assoc! m (from-data k) (from-data v))) (transient {}) x)))
        (vector? x) (mapv from-data x)
        (set? x) (into #{} (map from-data) x)
        :else x))

(defn- state-bytes ^bytes [x]
  (let [d (to-data x)]
    (if (identical? d ::none) (java-bytes x) (RecordCodec/encode d))))

(defn- state-object [^bytes b]
  (when b
    (if (and (pos? (alength b)) (= RecordCodec/BINARY_V1 (aget b 0)))
      (from-data (RecordCodec/decode b))
      (java-object b))))

(def state
  "Window extents in state stores: Clojure data in herald's binary codec, with HdrHistogram histograms in
  their own encoding and java.util.HashMaps as maps (the per-minute job's latency state, ~10x cheaper than
  Java serialization); a value holding anything else (records, other Java objects) by Java serialization, as
  the in-process snapshots require aggregation state to be Serializable. Reading tells the two apart by the
  first byte, so stores written before keep reading."
  (serde (fn [x] (when (some? x) (state-bytes x))) state-object))

(def ^:private store-key-edn
  (serde (fn [x] (edn-bytes x)) (fn [^bytes b] (when b (RecordCodec/decode b)))))

(def store-key
  "Keys of state stores (groups, window ids): EDN text."
  store-key-edn)

(defn topic-serde
  "The serde `:kafka/serde` of task map `task` names (:edn by default)."
  ^Serde [task]
  (let [s (:kafka/serde task :edn)]
    (case s
      :edn edn
      :codec codec
      (let [v (t/fn-ref! [:catalog (:task/name task) :kafka/serde] :kafka/serde s :any)
            v (if (and (fn? v) (not (instance? Serde v))) (try (v) (catch Exception _ v)) v)]
        (if (instance? Serde v)
          v
          (t/invalid! [:catalog (:task/name task) :kafka/serde] :kafka/serde s "does not name a Serde"
                      "point it at a var holding an org.apache.kafka.common.serialization.Serde (or a fn of no arguments returning one)"))))))
