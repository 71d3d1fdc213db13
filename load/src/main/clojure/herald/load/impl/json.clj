(ns herald.load.impl.json
  "A small JSON writer and reader over jackson-core for Clojure data (results, progress lines, feed bodies)."
  (:import (com.fasterxml.jackson.core JsonFactory JsonGenerator JsonParser JsonToken)
           (com.fasterxml.jackson.core.util ByteArrayBuilder)
           (java.io StringWriter)))

(set! *warn-on-reflection* true)

(def ^:private ^JsonFactory factory (JsonFactory.))

(defn- write-value [^JsonGenerator g x]
  (cond (nil? x) (.writeNull g)
        (string? x) (.writeString g ^String x)
        (keyword? x) (.writeString g (if-let [n (namespace x)] (str n "/" (name x)) (name x)))
        (boolean? x) (.writeBoolean g (boolean x))
        (integer? x) (.writeNumber g (long x))
        (float? x) (let [d (double x)]
                     (if (or (Double/isNaN d) (Double/isInfinite d)) (.writeNull g) (.writeNumber g d)))
        (ratio? x) (.writeNumber g (double x))
        (map? x) (do (.writeStartObject g)
                     (doseq [[k v] x]
                       (.writeFieldName g (if (keyword? k) (name k) (str k)))
                       (write-value g v))
                     (.writeEndObject g))
        (or (sequential? x) (set? x)) (do (.writeStartArray g)
                                          (doseq [v x] (write-value g v))
                                          (.writeEndArray g))
        :else (.writeString g (str x))))

(defn write-str
  "`x` as a JSON string (keywords as names, other unknown values as strings)."
  ^String [x]
  (let [w (StringWriter.)]
    (with-open [g (.createGenerator factory w)]
      (write-value g x))
    (str w)))

(defn write-bytes
  "`x` as JSON in UTF-8 bytes (as `write-str`, without the String in between)."
  ^bytes [x]
  (let [out (ByteArrayBuilder. 256)]
    (with-open [g (.createGenerator factory out)]
      (write-value g x))
    (.toByteArray out)))

(defn- read-value [^JsonParser p]
  (let [t (.currentToken p)]
    (condp = t
      JsonToken/START_OBJECT (loop [m (transient {})]
                               (if (= JsonToken/END_OBJECT (.nextToken p))
                                 (persistent! m)
                                 (let [k (.currentName p)]
                                   (.nextToken p)
                                   (recur (assoc! m (keyword k) (read-value p))))))
      JsonToken/START_ARRAY (loop [v (transient [])]
                              (if (= JsonToken/END_ARRAY (.nextToken p))
                                (persistent! v)
                                (recur (conj! v (read-value p)))))
      JsonToken/VALUE_STRING (.getText p)
      JsonToken/VALUE_NUMBER_INT (.getLongValue p)
      JsonToken/VALUE_NUMBER_FLOAT (.getDoubleValue p)
      JsonToken/VALUE_TRUE true
      JsonToken/VALUE_FALSE false
      JsonToken/VALUE_NULL nil
      (throw (ex-info (str "unexpected JSON token " t) {:type :herald.load/bad-json})))))

(defn read-bytes
  "Parses JSON bytes into Clojure data with keyword keys."
  [^bytes b]
  (with-open [p (.createParser factory b)]
    (.nextToken p)
    (read-value p)))

(defn- scalar [^JsonParser p]
  (condp = (.currentToken p)
    JsonToken/VALUE_STRING (.getText p)
    JsonToken/VALUE_NUMBER_INT (.getLongValue p)
    JsonToken/VALUE_NUMBER_FLOAT (.getDoubleValue p)
    JsonToken/VALUE_TRUE true
    JsonToken/VALUE_FALSE false
    (do (.skipChildren p) nil)))

(defn read-field
  "The value of top-level field `field-name` of the JSON object in bytes `b` when it is a string, number or
  boolean (as `read-bytes` would give it); nil when the field is missing or not such a value, or `b` is not a
  JSON object. Reads only up to the field: the hot path's way to take one value from a response."
  [^bytes b ^String field-name]
  (try
    (with-open [p (.createParser factory b)]
      (when (= JsonToken/START_OBJECT (.nextToken p))
        (loop []
          (when (= JsonToken/FIELD_NAME (.nextToken p))
            (let [k (.currentName p)]
              (.nextToken p)
              (if (= field-name k) (scalar p) (do (.skipChildren p) (recur))))))))
    (catch java.io.IOException _ nil)))
