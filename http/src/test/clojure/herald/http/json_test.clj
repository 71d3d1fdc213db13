(ns herald.http.json-test
  "herald.http.json: round-trip properties, agreement with Jackson's tree model, malformed input."
  (:require [clojure.string :as str]
            [herald.http.measure :refer [ns-per-op]]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.http.json :as json])
  (:import (com.fasterxml.jackson.core JsonFactory JsonParser JsonToken ObjectCodec TreeNode)
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
    (= (canonical x) (json/read-json (json/write-json x)) (json/read-json (json/write-json-bytes x)))))

(defspec keyword-keyed-data-round-trips-with-keywords 200
  (prop/for-all [x (gen-json-data (gen/one-of [gen/keyword gen/keyword-ns]))]
    (= (canonical x) (json/read-json (json/write-json-bytes x) {:keywords? true}))))

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

(defn- expected
  "What read-json gives back for `x`, per the conversion table of write-json."
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
    (= (expected x) (json/read-json (json/write-json x)))))

(deftest conversion-examples
  (is (= "{\"a/b\":[\"k\",\"ns/k\",\"sym\",0.5,\"c\"]}" (json/write-json {:a/b [:k :ns/k 'sym 1/2 \c]})))
  (is (= "[\"2026-11-22T13:00:00Z\"]" (json/write-json [(Instant/parse "2026-11-22T13:00:00Z")])))
  (is (= 0.1M (json/read-json "0.1" {:bigdecimals? true})))
  (is (= 1.0E400M (json/read-json "1e400" {:bigdecimals? true})))
  (is (= {:a {"x" 1}} (json/read-json "{\"a\":{\"x\":1}}" {:key-fn #(if (= "a" %) :a %)})))
  (is (= 18446744073709551616N (json/read-json "18446744073709551616")))
  (is (instance? Long (json/read-json "-9223372036854775808")))
  (is (= "{\n  \"a\" : 1\n}" (str/replace (json/write-json {:a 1} {:pretty? true}) "\r" "")))
  (is (= "{\"A\":{\"B_C\":1}}" (json/write-json {:a {:b-c 1}} {:key-fn #(-> % name str/upper-case (str/replace "-" "_"))})))
  (is (= :herald.http/json-encode-error
         (:type (ex-data (try (json/write-json {:a 1} {:key-fn (constantly 1)}) (catch Exception e e))))))
  (testing "what JSON cannot hold"
    (doseq [bad [##NaN ##Inf (Object.) {[1] 2} (atom 1)]]
      (is (= :herald.http/json-encode-error (:type (ex-data (try (json/write-json bad) (catch Exception e e))))) (pr-str bad)))))

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

(defn- ours [s] (try (json/read-json s)
                     (catch clojure.lang.ExceptionInfo e
                       (if (= :herald.http/malformed-json (:type (ex-data e))) ::invalid (throw e)))))

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
  (clojure.test/do-report {:type :skip :message "jackson-databind is not on the test classpath (see http/pom.xml)"}))

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
  (try (json/read-json x (or opts {})) ::no-error
       (catch clojure.lang.ExceptionInfo e (ex-data e))
       (catch Throwable t {:unexpected t})))

(deftest malformed-json-is-always-ex-info
  (doseq [s ["" " " "{" "[1,2" "{\"a\":1" "\"abc" "[1] x" "{}{}" "1 2" "{\"a\":1,}" "[01]" "\"\\x\"" "\"\\u12\""
             "{\"a\"}" "{1:2}" "undefined" "NaN" "Infinity" "--1" "1e" "[\"\t\"]" "\u00ff"]]
    (let [d (malformed-data s)]
      (is (= :herald.http/malformed-json (:type d)) (pr-str s d))
      (is (string? (:message d)) (pr-str s))))
  (testing "line and column"
    (is (= [3 5] ((juxt :line :column) (malformed-data "{\n\"a\":\n  1 2}")))))
  (testing "depth and size limits stop hostile input"
    (is (= :herald.http/malformed-json (:type (malformed-data (str (str/join (repeat 100000 "[")) (str/join (repeat 100000 "]")))))))
    (is (= :herald.http/malformed-json (:type (malformed-data "[[[[1]]]]" {:max-depth 3}))))
    (is (= [[[1]]] (json/read-json "[[[1]]]" {:max-depth 3})))
    (is (= :herald.http/malformed-json (:type (malformed-data "[\"abcdef\"]" {:max-string-length 5}))))
    (is (= :herald.http/malformed-json (:type (malformed-data "{\"a\":1,\"a\":2}" {:reject-duplicate-keys? true}))))
    (is (= {"a" 2} (json/read-json "{\"a\":1,\"a\":2}"))))
  (testing "bad UTF-8 and streams"
    (is (= :herald.http/malformed-json (:type (malformed-data (byte-array [0x22 0xC3 0x28 0x22])))))
    (is (= :herald.http/malformed-json (:type (malformed-data (java.io.ByteArrayInputStream. (.getBytes "[1,"))))))
    (is (= :herald.http/malformed-json (:type (malformed-data nil)))))
  (testing "bad options and inputs"
    (is (= {:type :herald.http/invalid-option :key :keywords :value true} (malformed-data "1" {:keywords true})))
    (is (= :herald.http/invalid-argument (:type (malformed-data 42))))))

(defspec random-bytes-never-throw-anything-but-malformed-json 200
  (prop/for-all [bs (gen/one-of [gen/bytes (gen/fmap #(.getBytes ^String %) gen-json-text)])]
    (let [r (malformed-data bs)]
      (or (= ::no-error r) (= :herald.http/malformed-json (:type r))))))

;; ---------------------------------------------------------------- measurement (not a timed assertion)


(deftest ^:benchmark json-figures
  (let [hello {:message "Hello, World!"}
        doc {:id 12345 :name "participant 12345" :friends (vec (range 50))
             :posts (vec (for [i (range 10)] {:id i :subject (str "subject " i) :story (apply str (repeat 20 "word "))
                                              :created "2026-11-22T13:00:00Z" :tags ["a" "b"]}))}
        doc-bytes (json/write-json-bytes doc)
        hello-bytes (json/write-json-bytes hello)
        java-doc (when tree-codec
                   (.readValue tree-codec (.createParser ^JsonFactory factory ^bytes doc-bytes) java.util.Map))
        databind-write (fn [] (let [bb (com.fasterxml.jackson.core.util.ByteArrayBuilder.)]
                                (with-open [g (.createGenerator ^JsonFactory factory bb)]
                                  (.writeValue tree-codec g java-doc))
                                (.toByteArray bb)))
        databind-read (fn [] (with-open [p (.createParser ^JsonFactory factory ^bytes doc-bytes)]
                               (.readValue tree-codec p java.util.Map)))]
    (println (format "bench json-write case=hello herald_ns=%.1f" (ns-per-op 500000 #(json/write-json-bytes hello))))
    (println (format "bench json-write case=doc bytes=%d herald_ns=%.1f" (alength ^bytes doc-bytes)
                     (ns-per-op 20000 #(json/write-json-bytes doc))))
    (println (format "bench json-read case=hello herald_ns=%.1f" (ns-per-op 500000 #(json/read-json hello-bytes {:keywords? true}))))
    (println (format "bench json-read case=doc herald_ns=%.1f" (ns-per-op 20000 #(json/read-json doc-bytes {:keywords? true}))))
    (when java-doc
      (println (format "bench json-write case=doc jackson_databind_java_maps_ns=%.1f" (ns-per-op 20000 databind-write)))
      (println (format "bench json-read case=doc jackson_databind_java_maps_ns=%.1f" (ns-per-op 20000 databind-read))))
    (is true)))
