(ns herald.http.impl.json
  "JSON codec plumbing: option validation, cached Java readers, errors as ex-info, JSON error responses."
  (:import (herald.http.codec JsonEncodeException JsonReader JsonReader$Keys JsonWriter
                              MalformedJsonException)
           (java.io InputStream Reader)
           (java.util.concurrent ConcurrentHashMap)))

(set! *warn-on-reflection* true)

(defn check-options!
  "Validates `opts` against `spec` (option key -> [pred description]); throws an ex-info
  `{:type :herald.http/invalid-option :key k :value v}` naming `who` and the first bad or unknown key."
  [who spec opts]
  (when-not (or (nil? opts) (map? opts))
    (throw (ex-info (str who " options must be a map, got " (pr-str opts))
                    {:type :herald.http/invalid-option :value opts})))
  (doseq [[k v] opts]
    (if-let [[pred desc] (get spec k)]
      (when-not (pred v)
        (throw (ex-info (str who " option " k " must be " desc ", got " (pr-str v))
                        {:type :herald.http/invalid-option :key k :value v})))
      (throw (ex-info (str who " has no option " k "; known options: " (sort (keys spec)))
                      {:type :herald.http/invalid-option :key k :value v}))))
  opts)

(defn pos-int-option? [x] (and (int? x) (pos? x)))

(def read-options
  "Option spec of read-json and wrap-json-body's reading options."
  {:keywords?              [boolean? "a boolean"]
   :key-fn                 [ifn? "a function of one String"]
   :bigdecimals?           [boolean? "a boolean"]
   :reject-duplicate-keys? [boolean? "a boolean"]
   :max-depth              [pos-int-option? "a positive integer"]
   :max-string-length     [pos-int-option? "a positive integer (chars)"]})

(def write-options
  "Option spec of write-json and write-json-bytes."
  {:pretty? [boolean? "a boolean"]
   :key-fn  [ifn? "a function of a map key returning a String"]})

(defn- build-reader ^JsonReader [opts]
  (let [{:keys [keywords? key-fn bigdecimals? reject-duplicate-keys? max-depth max-string-length]
         :or {max-depth 512 max-string-length 20000000}} opts
        keys (cond key-fn JsonReader$Keys/FN keywords? JsonReader$Keys/KEYWORDS :else JsonReader$Keys/STRINGS)]
    (JsonReader. keys key-fn (boolean bigdecimals?) (boolean reject-duplicate-keys?)
                 (int max-depth) (int max-string-length))))

(def ^:private ^ConcurrentHashMap readers (ConcurrentHashMap.))

(defn json-reader
  "The JsonReader for validated read options (cached per distinct options map, up to 256 of them)."
  ^JsonReader [opts]
  (cond
    (empty? opts) JsonReader/DEFAULT
    (= opts {:keywords? true}) JsonReader/KEYWORDIZING
    :else (or (.get readers opts)
              (let [r (build-reader (check-options! "read-json" read-options opts))]
                (when (< (.size readers) 256) (.putIfAbsent readers opts r))
                r))))

(defn malformed
  "The ex-info for a MalformedJsonException."
  [^MalformedJsonException e]
  (ex-info (.getMessage e)
           (cond-> {:type :herald.http/malformed-json :message (.detail e)}
             (pos? (.line e)) (assoc :line (.line e) :column (.column e)))
           e))

(defn read-with
  "Reads one JSON value from `x` (String, byte[], InputStream or Reader) with `reader`."
  [^JsonReader reader x]
  (try
    (cond
      (string? x) (.read reader ^String x)
      (bytes? x) (.read reader ^bytes x 0 (alength ^bytes x))
      (instance? InputStream x) (.read reader ^InputStream x)
      (instance? Reader x) (.read reader ^Reader x)
      (nil? x) (throw (MalformedJsonException. "no JSON value (nil input)" -1 -1 nil))
      :else (throw (ex-info (str "read-json cannot read a " (.getName (class x))
                                 "; give a String, byte[], InputStream or Reader")
                            {:type :herald.http/invalid-argument :value-class (class x)})))
    (catch MalformedJsonException e (throw (malformed e)))))

(defn json-writer
  "The JsonWriter for write options (shared instances unless a :key-fn is given)."
  ^JsonWriter [opts]
  (check-options! "write-json" write-options opts)
  (let [{:keys [pretty? key-fn]} opts]
    (cond key-fn (JsonWriter. (boolean pretty?) key-fn)
          pretty? JsonWriter/PRETTY
          :else JsonWriter/DEFAULT)))

(defn encode-error [^JsonEncodeException e]
  (let [v (.value e)]
    (ex-info (.getMessage e) {:type :herald.http/json-encode-error :value-class (some-> v class)} e)))

(def ^:private json-type "application/json; charset=utf-8")

(defn error-response
  "A JSON error response: `{\"error\": message}` with `status`."
  [status message]
  {:status status
   :headers {"Content-Type" json-type}
   :body (.writeBytes JsonWriter/DEFAULT {"error" message})})
