(ns herald.load.json-test
  "The feed workload's hot-path JSON: request bodies equal to herald.json/write-bytes's, one response field read as
  the whole reader reads it (nil for what is no JSON object), results written with herald-load's conventions (its
  words: words-test)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.json :as json]
            [herald.load.impl.feed :as feed]
            [herald.load.impl.result-json :as result-json]))

(set! *warn-on-reflection* true)

(defn- utf8 ^bytes [^String s] (.getBytes s "UTF-8"))

(deftest request-bodies-are-write-bytes
  (doseq [x [{:from "/participant/1" :occurred "2026-11-26" :subject "ä b \"c\"" :story "line\nnext \u2603"}
             {:name "x"} {} [1 2.5 nil true "s"]]]
    (is (= (seq (json/write-bytes x)) (seq (feed/json-body x))) (pr-str x))
    (is (= x (json/read (feed/json-body x) {:keywords? true})) (pr-str x)))
  (testing "outside the BMP: raw UTF-8 where write-bytes writes \\u escapes; the same value"
    (let [x {:story "\uD83D\uDE00 x"}]
      (is (= [-16 -97 -104 -128] (take 4 (drop 10 (seq (feed/json-body x))))))
      (is (= x (json/read (feed/json-body x) {:keywords? true}) (json/read (json/write-bytes x) {:keywords? true}))))))

(deftest response-field-reads-one-top-level-value
  (let [post (utf8 (json/write-str {:from "/participant/5" :story (apply str (repeat 500 "w ")) :nested {:id 9 :link "no"}
                                    :tags [{:id 8}] :id 52979 :link "/participant/5/outbound/52979" :ok true :score 1.5}))]
    (testing "the value the whole reader gives, for each field"
      (doseq [[k f] [[:id "id"] [:link "link"] [:ok "ok"] [:score "score"] [:from "from"] [:nested "nested"] [:tags "tags"]]]
        (is (= (get (json/read post) f) (feed/response-field post f)) f)))
    (testing "nested objects and arrays are not searched"
      (is (= 52979 (feed/response-field post "id")))
      (is (= {"id" 9 "link" "no"} (feed/response-field post "nested"))))
    (testing "missing fields, other documents and malformed bodies give nil"
      (is (nil? (feed/response-field post "missing")))
      (is (nil? (feed/response-field (utf8 "[{\"id\":1}]") "id")))
      (is (nil? (feed/response-field (utf8 "") "id")))
      (is (nil? (feed/response-field (utf8 "{\"id\":") "id")))
      (is (nil? (feed/response-field (utf8 "not json") "id")))
      (is (nil? (feed/response-field (utf8 "{\"a\":[1,") "id"))))))

(deftest results-keep-their-json-conventions
  (is (= {"result" 1 "mode" "rate" "p99" nil "rate" nil "steps" [{"label" "x" "at" "2026-11-26"}] "ratio" 0.5 "path" "/tmp/r"}
         (json/read (result-json/write-str {:herald.load/result 1 :mode :rate :p99 ##NaN :rate ##Inf
                                            :steps [{:label "x" :at (java.time.LocalDate/of 2026 11 26)}] :ratio 1/2
                                            :path (java.io.File. "/tmp/r")})))))
