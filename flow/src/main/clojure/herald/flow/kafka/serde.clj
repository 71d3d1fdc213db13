(ns herald.flow.kafka.serde
  "Serdes of the Kafka Streams runtime: segments as EDN text or herald's binary codec, group keys, and window state."
  (:require [herald.flow.impl.types :as t])
  (:import (herald.flow.log RecordCodec)
           (java.io ByteArrayInputStream ByteArrayOutputStream ObjectInputStream ObjectOutputStream)
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

(def state
  "Window extents in state stores, by Java serialization: Clojure data and HdrHistogram histograms are
  Serializable, as the in-process snapshots require of aggregation state too."
  (serde (fn [x] (when (some? x) (java-bytes x))) java-object))

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
