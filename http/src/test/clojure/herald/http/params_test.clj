(ns herald.http.params-test
  "wrap-params: query strings and urlencoded forms decoded in Java, Ring-compatible keys, limits."
  (:require [clojure.string :as str]
            [herald.http.measure :refer [ns-per-op]]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.json :as json]
            [herald.http.middleware :as mw])
  (:import (herald.http.codec FormDecoder)
           (java.io ByteArrayInputStream InputStream)
           (java.net URLEncoder)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(def ^:private echo
  (mw/wrap-params (fn [req] {:status 200
                             :body (assoc (select-keys req [:query-params :form-params :params])
                                          :rest (when (instance? InputStream (:body req)) (slurp (:body req))))})))

(defn- form [body & {:keys [ct qs] :or {ct "application/x-www-form-urlencoded"}}]
  (cond-> {:request-method :post :uri "/" :headers {"content-type" ct}
           :body (ByteArrayInputStream. (if (bytes? body) body (.getBytes ^String body "UTF-8")))}
    qs (assoc :query-string qs)))

(deftest query-strings
  (let [b (:body (echo {:request-method :get :uri "/" :headers {}
                        :query-string "a=1&a=2&b=x+y%2Bz&c=%E2%82%AC&d&e=&=f&g=%zz&h=100%&a=3"}))]
    (is (= {"a" ["1" "2" "3"] "b" "x y+z" "c" "€" "d" "" "e" "" "g" "%zz" "h" "100%"} (:query-params b)))
    (is (= (:query-params b) (:params b)))
    (is (= {} (:form-params b)) "no form body"))
  (is (= {} (:query-params (:body (echo {:request-method :get :uri "/" :headers {}})))) "no query string")
  (is (= {} (:query-params (:body (echo {:request-method :get :uri "/" :headers {} :query-string ""})))))
  (is (= {"ü" "ö"} (:query-params (:body (echo {:request-method :get :uri "/" :headers {} :query-string "%C3%BC=%C3%B6"}))))))

(deftest urlencoded-forms
  (let [b (:body (echo (form "a=form&f=1&f=2&n=J%C3%B6+D" :qs "a=query&q=1")))]
    (is (= {"a" "form" "f" ["1" "2"] "n" "Jö D"} (:form-params b)))
    (is (= {"a" "query" "q" "1"} (:query-params b)))
    (is (= {"a" "form" "f" ["1" "2"] "n" "Jö D" "q" "1"} (:params b)) "form params win, as in Ring")
    (is (= "a=form&f=1&f=2&n=J%C3%B6+D" (:rest b)) "the body can be read again"))
  (testing "the request's charset"
    (is (= {"n" "été"} (:form-params (:body (echo (form (.getBytes "n=%E9t%E9" "ISO-8859-1")
                                                        :ct "application/x-www-form-urlencoded; charset=ISO-8859-1")))))))
  (testing "content type is matched without parameters and case"
    (is (= {"x" "1"} (:form-params (:body (echo (form "x=1" :ct "Application/X-WWW-Form-Urlencoded ; charset=utf-8")))))))
  (testing "other bodies are not read"
    (let [b (:body (echo (form "{\"x\":1}" :ct "application/json")))]
      (is (= {} (:form-params b)))
      (is (= "{\"x\":1}" (:rest b))))))

(deftest existing-keys-are-kept
  (let [h (mw/wrap-params (fn [req] (select-keys req [:query-params :params])))]
    (is (= {:query-params {"x" "pre"} :params {"id" "7"}}
           (h {:query-string "x=1" :query-params {"x" "pre"} :params {"id" "7"} :headers {}}))
        "decoded already (by an outer wrap-params): left as is, as Ring does")
    (is (= {"id" "7" "x" "1"} (:params (h {:query-string "x=1" :params {"id" "7"} :headers {}}))))))

(deftest limits
  (let [h (mw/wrap-params (fn [_] {:status 200}) {:max-form-bytes 10 :max-params 3})]
    (let [resp (h (form "a=12345678901"))]
      (is (= 413 (:status resp)))
      (is (re-find #"larger than 10 bytes" (get (json/read (:body resp)) "error"))))
    (is (= 200 (:status (h (form "a=12345678")))))
    (let [resp (h {:headers {} :query-string "a=1&b=2&c=3&d=4"})]
      (is (= 400 (:status resp)))
      (is (= {"error" "too many parameters (more than 3)"} (json/read (:body resp)))))
    (is (= 400 (:status (h (form "a&b&c&d")))))))

(deftest async-arity
  (let [h (mw/wrap-params (fn [req respond _] (respond {:status 200 :body (:params req)})) {:max-params 1})
        run (fn [req] (let [p (promise)] (h req p p) (deref p 30000 :timeout)))]
    (is (= {"a" "1"} (:body (run {:headers {} :query-string "a=1"}))))
    (is (= 400 (:status (run {:headers {} :query-string "a=1&b=2"}))))))

(deftest options-are-validated
  (doseq [[opts k] [[{:encoding "NOPE-42"} :encoding] [{:max-params 0} :max-params] [{:max-bytes 1} :max-bytes]]]
    (let [d (try (mw/wrap-params identity opts) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= [:herald.http/invalid-option k] [(:type d) (:key d)])))))

;; ---------------------------------------------------------------- round trips

(def ^:private gen-text
  (gen/fmap str/join (gen/vector (gen/one-of [gen/char-ascii gen/char (gen/elements ["é" "€" "😀" " " "+" "&" "=" "%"])]) 0 8)))

(defn- expected-params
  "What decoding gives for `pairs`: keys in order, repeated keys as vectors, empty keys dropped."
  [pairs]
  (reduce (fn [m [k v]]
            (cond (= "" k) m
                  (not (contains? m k)) (assoc m k v)
                  (vector? (m k)) (update m k conj v)
                  :else (assoc m k [(m k) v])))
          {} pairs))

(defspec url-encoded-pairs-round-trip 200
  (prop/for-all [pairs (gen/vector (gen/tuple (gen/one-of [gen-text (gen/elements ["a" "b"])]) gen-text) 0 8)]
    (let [enc #(URLEncoder/encode ^String % StandardCharsets/UTF_8)
          qs (str/join "&" (for [[k v] pairs] (str (enc k) "=" (enc v))))
          bs (.getBytes qs StandardCharsets/US_ASCII)]
      (= (expected-params pairs)
         (FormDecoder/decode qs StandardCharsets/UTF_8 1000)
         (FormDecoder/decode bs 0 (alength bs) StandardCharsets/UTF_8 1000)))))

(defspec arbitrary-text-never-throws 200
  (prop/for-all [s (gen/fmap str/join (gen/vector (gen/one-of [gen-text (gen/elements ["%" "%2" "%zz" "%C3" "&&" "=="])]) 0 10))]
    (let [bs (.getBytes ^String s StandardCharsets/UTF_8)]
      (and (map? (FormDecoder/decode ^String s StandardCharsets/UTF_8 1000))
           (map? (FormDecoder/decode bs 0 (alength bs) StandardCharsets/UTF_8 1000))))))

;; ---------------------------------------------------------------- measurement (not a timed assertion)


(deftest ^:benchmark query-decoding-figures
  (let [qs "id=12345&name=J%C3%B6rg+Doe&tags=a&tags=b&page=2&size=50&q=hello+world%21"
        ours (ns-per-op 200000 #(herald.http.codec.FormDecoder/decode qs java.nio.charset.StandardCharsets/UTF_8 1000))
        ring-decode (when (clojure.java.io/resource "ring/util/codec.clj") (requiring-resolve 'ring.util.codec/form-decode))
        theirs (when ring-decode (ns-per-op 20000 #(ring-decode qs "UTF-8")))]
    (when ring-decode (is (= (ring-decode qs "UTF-8") (herald.http.codec.FormDecoder/decode qs java.nio.charset.StandardCharsets/UTF_8 1000))))
    (println (format "bench query-decode pairs=7 herald_ns=%.1f%s" ours
                     (if theirs (format " ring_codec_ns=%.1f ratio=%.3f" theirs (/ ours theirs)) "")))
    (is true)))
