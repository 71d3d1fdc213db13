(ns herald.json.impl
  "herald.json's plumbing: option validation, cached Java readers and writers, errors as ex-info."
  (:import (herald.json JsonEncodeException JsonReader JsonReader$Keys JsonWriter MalformedJsonException)
           (java.io InputStream Reader)
           (java.util.concurrent ConcurrentHashMap)))

(set! *warn-on-reflection* true)

(defn- check-options!
  "Validates `opts` against `spec` (option key -> [pred description]); throws an ex-info
  `{:type :herald.json/invalid-option :key k :value v}` naming `who` and the first bad or unknown key."
  [who spec opts]
  (when-not (or (nil? opts) (map? opts))
    (throw (ex-info (str who " options must be a map, got " (pr-str opts))
                    {:type :herald.json/invalid-option :value opts})))
  (doseq [[k v] opts]
    (if-let [[pred desc] (get spec k)]
      (when-not (pred v)
        (throw (ex-info (str who " option " k " must be " desc ", got " (pr-str v))
                        {:type :herald.json/invalid-option :key k :value v})))
      (throw (ex-info (str who " has no option " k "; known options: " (sort (keys spec)))
                      {:type :herald.json/invalid-option :key k :value v}))))
  opts)

(defn- positive-int? [x] (and (int? x) (pos? x)))

(def ^:private read-options
  {:keywords?              [boolean? "a boolean"]
   :key-fn                 [ifn? "a function of one String"]
   :bigdecimals?           [boolean? "a boolean"]
   :reject-duplicate-keys? [boolean? "a boolean"]
   :max-depth              [positive-int? "a positive integer"]
   :max-string-length      [positive-int? "a positive integer (chars)"]})

(def ^:private write-options
  {:pretty? [boolean? "a boolean"]
   :key-fn  [ifn? "a function of a map key returning a String"]})

(defn- build-reader ^JsonReader [opts]
  (let [{:keys [keywords? key-fn bigdecimals? reject-duplicate-keys? max-depth max-string-length]
         :or {max-depth 512 max-string-length 20000000}} opts
        keys (cond key-fn JsonReader$Keys/FN keywords? JsonReader$Keys/KEYWORDS :else JsonReader$Keys/STRINGS)]
    (JsonReader. keys key-fn (boolean bigdecimals?) (boolean reject-duplicate-keys?)
                 (int max-depth) (int max-string-length))))

(def ^:private ^ConcurrentHashMap readers (ConcurrentHashMap.))

(defn reader
  "The JsonReader for read options, validated (cached per distinct options map, up to 256 of them)."
  ^JsonReader [opts]
  (cond
    (empty? opts) JsonReader/DEFAULT
    (= opts {:keywords? true}) JsonReader/KEYWORDIZING
    :else (or (.get readers opts)
              (let [r (build-reader (check-options! "herald.json/read" read-options opts))]
                (when (< (.size readers) 256) (.putIfAbsent readers opts r))
                r))))

(defn writer
  "The JsonWriter for write options, validated (shared instances unless a :key-fn is given)."
  ^JsonWriter [opts]
  (if (empty? opts)
    JsonWriter/DEFAULT
    (let [{:keys [pretty? key-fn]} (check-options! "herald.json/write" write-options opts)]
      (cond key-fn (JsonWriter. (boolean pretty?) key-fn)
            pretty? JsonWriter/PRETTY
            :else JsonWriter/DEFAULT))))

(defn- malformed [^MalformedJsonException e]
  (ex-info (.getMessage e)
           (cond-> {:type :herald.json/malformed :message (.detail e)}
             (pos? (.line e)) (assoc :line (.line e) :column (.column e)))
           e))

(defn read-with
  "Reads `x` (String, byte[], InputStream or Reader) with `reader`: the whole value, or with a `field` name only
  that top-level field."
  [^JsonReader reader x ^String field]
  (try
    (cond
      (string? x) (if field (.readField reader ^String x field) (.read reader ^String x))
      (bytes? x) (if field
                   (.readField reader ^bytes x 0 (alength ^bytes x) field)
                   (.read reader ^bytes x 0 (alength ^bytes x)))
      (instance? InputStream x) (if field (.readField reader ^InputStream x field) (.read reader ^InputStream x))
      (instance? Reader x) (if field (.readField reader ^Reader x field) (.read reader ^Reader x))
      (nil? x) (throw (MalformedJsonException. "no JSON value (nil input)" -1 -1 nil))
      :else (throw (ex-info (str "herald.json cannot read a " (.getName (class x))
                                 "; give a String, byte[], InputStream or Reader")
                            {:type :herald.json/invalid-argument :value-class (class x)})))
    (catch MalformedJsonException e (throw (malformed e)))))

(defn write-with
  "Calls `f`, turning a JsonEncodeException into an ex-info `{:type :herald.json/unencodable}`."
  [f]
  (try (f)
       (catch JsonEncodeException e
         (throw (ex-info (.getMessage e) {:type :herald.json/unencodable :value-class (some-> (.value e) class)} e)))))
