(ns herald.json-test
  "herald.json: round-trip properties, agreement with Jackson's tree model, malformed input."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.json :as json])
  (:import (com.fasterxml.jackson.core JsonFactory JsonParser JsonToken ObjectCodec TreeNode)
           (java.lang.management ManagementFactory)
           (java.time Instant)
           (java.util Date UUID)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------- generators of Clojure data

(def gen-text
  "Strings with ASCII, control characters, quotes, backslashes and non-BMP characters."
  (gen/fmap str/join (gen/vector (gen/one-of [gen/char-ascii gen/char
                                              (gen/elements ["\"" "\\" "/" "\n" "\u0000" "é" "€" "😀" "\u2028"])])
                                 0 12)))

(def gen-scalar
  (gen/one-of [gen-text gen/large-integer (gen/double* {:infinite? false :NaN? false}) gen/boolean
               (gen/return nil) gen/size-bounded-bigint]))

(defn- gen-json-data [key-gen]
  (gen/recursive-gen (fn [inner] (gen/one-of [(gen/vector inner 0 5) (gen/map key-gen inner {:max-elements 5})]))
                     gen-scalar))

(defn- normalize-number [x] (if (and (instance? clojure.lang.BigInt x) (<= Long/MIN_VALUE x Long/MAX_VALUE)) (long x) x))

(defn- canonical [x]
  (cond (map? x) (update-vals x canonical)
        (vector? x) (mapv canonical x)
        :else (normalize-number x)))

(defspec string-keyed-data-round-trips 200
  (prop/for-all [x (gen-json-data gen-text)]
    (= (canonical x) (json/read (json/write-str x)) (json/read (json/write-bytes x)))))

(defspec keyword-keyed-data-round-trips-with-keywords 200
  (prop/for-all [x (gen-json-data (gen/one-of [gen/keyword gen/keyword-ns]))]
    (= (canonical x) (json/read (json/write-bytes x) {:keywords? true}))))

;; ---------------------------------------------------------------- documented conversions

(def gen-rich
  "Clojure values the writer accepts but that do not come back as themselves."
  (gen/recursive-gen
   (fn [inner] (gen/one-of [(gen/vector inner 0 4) (gen/list inner) (gen/set inner {:max-elements 4})
                            (gen/map (gen/one-of [gen/keyword-ns gen/symbol gen/large-integer gen/uuid]) inner
                                     {:max-elements 4})]))
   (gen/one-of [gen/keyword-ns gen/symbol-ns gen/ratio gen/uuid gen/char (gen/fmap #(bigdec %) gen/large-integer)
                (gen/fmap #(Instant/ofEpochMilli %) (gen/large-integer* {:min 0 :max 4102444800000}))
                (gen/fmap #(Date. (long %)) (gen/large-integer* {:min 0 :max 4102444800000}))])))

;; write-bytes hands Jackson's byte generator long strings as char[]s (JsonWriter.writeText): the bytes must be those
;; of the generator's own String path, lone surrogates included (or both refuse the value alike).

(def gen-long-text
  "Strings of 0-120 pieces, long enough for the char[] path, with escapes, non-BMP and unpaired surrogates."
  (gen/fmap str/join (gen/vector (gen/one-of [gen/char-ascii gen/char
                                              (gen/elements ["\"" "\\" "\n" "\u0000" "é" "€" "😀" "\u2028"
                                                             "\uD800" "\uDC00" "lorem ipsum dolor sit amet "])])
                                 0 120)))

(defn- jackson-string-path
  "The bytes of `{\"k\" s}` from Jackson's UTF-8 generator given `s` as a String, or :refused."
  [^String s]
  (try (let [bb (com.fasterxml.jackson.core.util.ByteArrayBuilder.)]
         (with-open [g (.createGenerator (JsonFactory.) bb)]
           (.writeStartObject g) (.writeFieldName g "k") (.writeString g s) (.writeEndObject g))
         (vec (.toByteArray bb)))
       (catch java.io.IOException _ :refused)))

(defn- write-bytes-outcome [s]
  (try (vec (json/write-bytes {"k" s}))
       (catch clojure.lang.ExceptionInfo e (if (= :herald.json/unencodable (:type (ex-data e))) :refused (throw e)))))

(defspec write-bytes-is-jacksons-string-path-byte-for-byte 300
  (prop/for-all [s gen-long-text]
    (= (jackson-string-path s) (write-bytes-outcome s))))

(deftest write-bytes-of-long-strings-round-trips
  (doseq [s [(apply str (repeat 40 "lorem ")) (str (apply str (repeat 40 "é")) "\u2028\"\\\n") (apply str (repeat 33 "x"))]]
    (is (= s (get (json/read (json/write-bytes {"k" s})) "k")))
    (is (= (json/write-str {"k" s}) (String. ^bytes (json/write-bytes {"k" s}) "UTF-8"))))
  (let [s (apply str "😀" (repeat 40 "a"))]
    (is (= s (get (json/read (json/write-bytes {"k" s})) "k")) "non-BMP: escaped pairs read back as the character")))

(defn- expected
  "What read gives back for `x`, per the conversion table of write-str."
  [x]
  (cond (map? x) (into {} (map (fn [[k v]] [(if (instance? clojure.lang.Named k) (subs (str (if (keyword? k) k (keyword k))) 1) (str k))
                                            (expected v)]) x))
        (coll? x) (mapv expected x)
        (instance? clojure.lang.Named x) (if (keyword? x) (subs (str x) 1) (str x))
        (ratio? x) (double x)
        (instance? Date x) (str (.toInstant ^Date x))
        (decimal? x) (let [d (bigdec x)] (if (zero? (.scale ^BigDecimal d)) (.longValueExact ^BigDecimal d) (double d)))
        (or (uuid? x) (char? x) (instance? Instant x)) (str x)
        :else x))

(defspec documented-conversions 200
  (prop/for-all [x gen-rich]
    (= (expected x) (json/read (json/write-str x)))))

(deftest conversion-examples
  (is (= "{\"a/b\":[\"k\",\"ns/k\",\"sym\",0.5,\"c\"]}" (json/write-str {:a/b [:k :ns/k 'sym 1/2 \c]})))
  (is (= "[\"2026-11-22T13:00:00Z\"]" (json/write-str [(Instant/parse "2026-11-22T13:00:00Z")])))
  (is (= 0.1M (json/read "0.1" {:bigdecimals? true})))
  (is (= 1.0E400M (json/read "1e400" {:bigdecimals? true})))
  (is (= {:a {"x" 1}} (json/read "{\"a\":{\"x\":1}}" {:key-fn #(if (= "a" %) :a %)})))
  (is (= 18446744073709551616N (json/read "18446744073709551616")))
  (is (instance? Long (json/read "-9223372036854775808")))
  (is (= "{\n  \"a\" : 1\n}" (str/replace (json/write-str {:a 1} {:pretty? true}) "\r" "")))
  (is (= "{\"A\":{\"B_C\":1}}" (json/write-str {:a {:b-c 1}} {:key-fn #(-> % name str/upper-case (str/replace "-" "_"))})))
  (is (= :herald.json/unencodable
         (:type (ex-data (try (json/write-str {:a 1} {:key-fn (constantly 1)}) (catch Exception e e))))))
  (testing "what JSON cannot hold"
    (doseq [bad [##NaN ##Inf (Object.) {[1] 2} (atom 1)]]
      (is (= :herald.json/unencodable (:type (ex-data (try (json/write-str bad) (catch Exception e e))))) (pr-str bad)))))

;; ---------------------------------------------------------------- agreement with Jackson's tree model

(def ^:private ^ObjectCodec tree-codec
  (try (.newInstance (.getDeclaredConstructor (Class/forName "com.fasterxml.jackson.databind.ObjectMapper")
                                              (make-array Class 0))
                     (object-array 0))
       (catch ClassNotFoundException _ nil)))

(def ^:private factory (JsonFactory.))

(defn- tree->clj [^TreeNode n]
  (cond
    (.isObject n) (into {} (map (fn [k] [k (tree->clj (.get n ^String k))])) (iterator-seq (.fieldNames n)))
    (.isArray n) (mapv #(tree->clj (.get n (int %))) (range (.size n)))
    :else (let [p (.traverse n)]
            (condp = (.nextToken p)
              JsonToken/VALUE_STRING (.getText p)
              JsonToken/VALUE_NUMBER_INT (canonical (let [v (.getNumberValue p)] (if (instance? BigInteger v) (bigint v) (long v))))
              ;; Jackson reads 1e400 as Infinity; herald refuses it (no JSON can carry it back out), see JsonReader
              JsonToken/VALUE_NUMBER_FLOAT (let [d (.getDoubleValue p)]
                                             (if (Double/isInfinite d) (throw (java.io.IOException. "beyond a double")) d))
              JsonToken/VALUE_TRUE true
              JsonToken/VALUE_FALSE false
              JsonToken/VALUE_NULL nil))))

(defn- reference-read
  "Jackson databind's readTree of `s`, as Clojure data; ::invalid when Jackson rejects it (or trailing content)."
  [^String s]
  (try
    (with-open [^JsonParser p (.createParser ^JsonFactory factory s)]
      (let [t (.readTree tree-codec p)]
        (if (or (nil? t) (.isMissingNode ^TreeNode t) (some? (.nextToken p))) ::invalid (tree->clj t))))
    (catch java.io.IOException _ ::invalid)))

(defn- ours [s] (try (json/read s)
                     (catch clojure.lang.ExceptionInfo e
                       (if (= :herald.json/malformed (:type (ex-data e))) ::invalid (throw e)))))

(def gen-ws (gen/elements ["" "" " " "\n" "\t" " \r\n "]))

(defn- escape-char [c mode]
  (let [i (int c)]
    (cond (= c \") "\\\"" (= c \\) "\\\\" (= c \/) (if mode "\\/" "/")
          (< i 32) (format "\\u%04x" i)
          mode (format "\\u%04X" i)
          :else (str c))))

(def gen-json-string
  (gen/let [s gen-text modes (gen/vector gen/boolean 12)]
    (str "\"" (str/join (map-indexed (fn [i c] (escape-char c (nth modes (mod i 12)))) s)) "\"")))

(def gen-json-number
  (gen/one-of [(gen/fmap str gen/large-integer) (gen/fmap str gen/size-bounded-bigint)
               (gen/fmap str (gen/double* {:infinite? false :NaN? false}))
               (gen/let [i gen/nat f gen/nat e (gen/large-integer* {:min -300 :max 300}) sign (gen/elements ["" "-"])
                         ee (gen/elements ["e" "E" "e+" "E-"])]
                 (str sign i "." f ee (abs e)))]))

(def gen-json-text
  (gen/recursive-gen
   (fn [inner]
     (gen/one-of
      [(gen/let [xs (gen/vector inner 0 4) ws gen-ws] (str "[" ws (str/join (str ws "," ws) xs) ws "]"))
       (gen/let [kvs (gen/vector (gen/tuple gen-json-string inner) 0 4) ws gen-ws]
         (str "{" ws (str/join "," (map (fn [[k v]] (str ws k ws ":" ws v)) kvs)) ws "}"))]))
   (gen/one-of [gen-json-string gen-json-number (gen/elements ["true" "false" "null"])])))

(defn- skip-without-databind []
  (clojure.test/do-report {:type :skip :message "jackson-databind is not on the test classpath (see json/pom.xml)"}))

(deftest agrees-with-jacksons-tree-model-on-random-json-text
  (if-not tree-codec
    (skip-without-databind)
    (let [r (tc/quick-check 300 (prop/for-all [s gen-json-text ws gen-ws]
                                                  (let [s (str ws s ws)] (= (reference-read s) (ours s)))))]
      (is (:pass? r) (pr-str (get-in r [:shrunk :smallest]))))))

(deftest agrees-with-jackson-on-which-prefixes-and-corruptions-are-valid
  (if-not tree-codec
    (skip-without-databind)
    (let [r (tc/quick-check
             300 (prop/for-all [s gen-json-text cut gen/nat junk (gen/elements ["" "x" "}" "]" "," "\"" "\\" "1" "{" "["])]
                   (let [t (str (subs s 0 (min cut (count s))) junk)]
                     (= (reference-read t) (ours t)))))]
      (is (:pass? r) (pr-str (get-in r [:shrunk :smallest])))
      (testing "a junk digit pushing an exponent past a double (CI, session 8): both refuse it"
        (is (= ::invalid (reference-read "1.0141204801825835E311") (ours "1.0141204801825835E311")))))))

;; ---------------------------------------------------------------- malformed input

(defn- malformed-data [x & [opts]]
  (try (json/read x (or opts {})) ::no-error
       (catch clojure.lang.ExceptionInfo e (ex-data e))
       (catch Throwable t {:unexpected t})))

(deftest malformed-json-is-always-ex-info
  (doseq [s ["" " " "{" "[1,2" "{\"a\":1" "\"abc" "[1] x" "{}{}" "1 2" "{\"a\":1,}" "[01]" "\"\\x\"" "\"\\u12\""
             "{\"a\"}" "{1:2}" "undefined" "NaN" "Infinity" "--1" "1e" "[\"\t\"]" "\u00ff"]]
    (let [d (malformed-data s)]
      (is (= :herald.json/malformed (:type d)) (pr-str s d))
      (is (string? (:message d)) (pr-str s))))
  (testing "line and column"
    (is (= [3 5] ((juxt :line :column) (malformed-data "{\n\"a\":\n  1 2}")))))
  (testing "depth and size limits stop hostile input"
    (is (= :herald.json/malformed (:type (malformed-data (str (str/join (repeat 100000 "[")) (str/join (repeat 100000 "]")))))))
    (is (= :herald.json/malformed (:type (malformed-data "[[[[1]]]]" {:max-depth 3}))))
    (is (= [[[1]]] (json/read "[[[1]]]" {:max-depth 3})))
    (is (= :herald.json/malformed (:type (malformed-data "[\"abcdef\"]" {:max-string-length 5}))))
    (is (= :herald.json/malformed (:type (malformed-data "{\"a\":1,\"a\":2}" {:reject-duplicate-keys? true}))))
    (is (= {"a" 2} (json/read "{\"a\":1,\"a\":2}"))))
  (testing "bad UTF-8 and streams"
    (is (= :herald.json/malformed (:type (malformed-data (byte-array [0x22 0xC3 0x28 0x22])))))
    (is (= :herald.json/malformed (:type (malformed-data (java.io.ByteArrayInputStream. (.getBytes "[1,"))))))
    (is (= :herald.json/malformed (:type (malformed-data nil)))))
  (testing "bad options and inputs"
    (is (= {:type :herald.json/invalid-option :key :keywords :value true} (malformed-data "1" {:keywords true})))
    (is (= :herald.json/invalid-argument (:type (malformed-data 42))))))

(defspec random-bytes-never-throw-anything-but-malformed-json 200
  (prop/for-all [bs (gen/one-of [gen/bytes (gen/fmap #(.getBytes ^String %) gen-json-text)])]
    (let [r (malformed-data bs)]
      (or (= ::no-error r) (= :herald.json/malformed (:type r))))))

;; ---------------------------------------------------------------- one top-level field

(defspec read-field-agrees-with-read-for-every-field 200
  (prop/for-all [m (gen/map gen-text (gen-json-data gen-text) {:max-elements 6})
                 as (gen/elements [identity #(.getBytes ^String %) #(java.io.StringReader. %)
                                   #(java.io.ByteArrayInputStream. (.getBytes ^String %))])]
    (let [s (json/write-str m)]
      (every? (fn [k] (= (get (json/read s) k) (json/read-field (as s) k))) (conj (keys m) "absent")))))

(deftest read-field-reads-only-up-to-the-field
  (let [doc "{\"nested\":{\"id\":9},\"tags\":[{\"id\":8}],\"id\":52979,\"ns/k\":{\"a\":1.5}}"]
    (testing "the top-level field, never one nested inside another value; options as read's"
      (is (= 52979 (json/read-field doc "id")))
      (is (= {"id" 9} (json/read-field doc "nested")))
      (is (= {:a 1.5M} (json/read-field doc "ns/k" {:keywords? true :bigdecimals? true}))))
    (testing "nothing after the field's value is read"
      (is (= 1 (json/read-field "{\"id\":1, garbage" "id")))
      (is (= 1 (json/read-field "{\"id\":1,\"id\":2}" "id")) "the first of repeated fields"))
    (testing "not an object, or no such field: nil"
      (is (nil? (json/read-field "[{\"id\":1}]" "id")))
      (is (nil? (json/read-field "\"id\"" "id")))
      (is (nil? (json/read-field "{\"a\":[1,{\"id\":2}]}" "id"))))
    (testing "malformed input up to the field throws as read does"
      (doseq [bad ["" "not json" "{\"id\":" "{\"a\":[1," "{\"id\":[1,}" "{\"a\":1 \"id\":2}" "{\"id\":1e400}"]]
        (is (= :herald.json/malformed (:type (ex-data (try (json/read-field bad "id") (catch Exception e e))))) bad)))))

;; ---------------------------------------------------------------- measurement (not a timed assertion)

(defn- ns-per-op
  "Best CPU ns per call of `f` over 9 rounds of `n` calls, after a warm-up (as herald.http.measure, which this
  module cannot depend on): the thread's CPU time, so other processes on a shared machine inflate it less."
  [n f]
  (let [mx (ManagementFactory/getThreadMXBean)]
    (dotimes [_ (* 2 n)] (f))
    (apply min (for [_ (range 9)]
                 (let [t0 (.getCurrentThreadCpuTime mx)]
                   (dotimes [_ n] (f))
                   (/ (double (- (.getCurrentThreadCpuTime mx) t0)) n))))))

(deftest ^:benchmark json-figures
  (let [hello {:message "Hello, World!"}
        doc {:id 12345 :name "participant 12345" :friends (vec (range 50))
             :posts (vec (for [i (range 10)] {:id i :subject (str "subject " i) :story (apply str (repeat 20 "word "))
                                              :created "2026-11-22T13:00:00Z" :tags ["a" "b"]}))}
        doc-bytes (json/write-bytes doc)
        hello-bytes (json/write-bytes hello)
        java-doc (when tree-codec
                   (.readValue tree-codec (.createParser ^JsonFactory factory ^bytes doc-bytes) java.util.Map))
        databind-write (fn [] (let [bb (com.fasterxml.jackson.core.util.ByteArrayBuilder.)]
                                (with-open [g (.createGenerator ^JsonFactory factory bb)]
                                  (.writeValue tree-codec g java-doc))
                                (.toByteArray bb)))
        databind-read (fn [] (with-open [p (.createParser ^JsonFactory factory ^bytes doc-bytes)]
                               (.readValue tree-codec p java.util.Map)))]
    (println (format "bench json-write case=hello herald_ns=%.1f" (ns-per-op 500000 #(json/write-bytes hello))))
    (println (format "bench json-write case=doc bytes=%d herald_ns=%.1f" (alength ^bytes doc-bytes)
                     (ns-per-op 20000 #(json/write-bytes doc))))
    (println (format "bench json-read case=hello herald_ns=%.1f" (ns-per-op 500000 #(json/read hello-bytes {:keywords? true}))))
    (println (format "bench json-read case=doc herald_ns=%.1f" (ns-per-op 20000 #(json/read doc-bytes {:keywords? true}))))
    (when java-doc
      (println (format "bench json-write case=doc jackson_databind_java_maps_ns=%.1f" (ns-per-op 20000 databind-write)))
      (println (format "bench json-read case=doc jackson_databind_java_maps_ns=%.1f" (ns-per-op 20000 databind-read))))
    (is true)))
