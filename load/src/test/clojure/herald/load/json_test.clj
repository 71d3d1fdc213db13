(ns herald.load.json-test
  "The feed workload's hot-path JSON and words: bytes written as the String writer writes them, one field read
  as the whole reader reads it, sentences from a String array equal to those from the vector."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.load.impl.json :as json]
            [herald.load.impl.words :as words])
  (:import (java.util Random)))

(set! *warn-on-reflection* true)

(defn- utf8 ^bytes [^String s] (.getBytes s "UTF-8"))

(deftest write-bytes-is-write-str-in-utf-8
  (doseq [x [{:from "/participant/1" :occurred "2026-11-26" :subject "ä b \"c\"" :story "line\nnext \u2603"}
             {:name "x"} {} [1 2.5 nil true "s"]]]
    (is (= (seq (utf8 (json/write-str x))) (seq (json/write-bytes x))) (pr-str x))))

(deftest read-field-reads-one-top-level-value
  (let [post (utf8 (json/write-str {:from "/participant/5" :story (apply str (repeat 500 "w ")) :nested {:id 9 :link "no"}
                                    :tags [{:id 8}] :id 52979 :link "/participant/5/outbound/52979" :ok true :score 1.5}))]
    (testing "the value the whole reader gives, for each kind of scalar"
      (doseq [[k f] [[:id "id"] [:link "link"] [:ok "ok"] [:score "score"] [:from "from"]]]
        (is (= (k (json/read-bytes post)) (json/read-field post f)) f)))
    (testing "nested objects and arrays are skipped, not searched"
      (is (= 52979 (json/read-field post "id")))
      (is (nil? (json/read-field post "nested")))
      (is (nil? (json/read-field post "tags"))))
    (testing "missing fields, other documents and malformed bodies give nil"
      (is (nil? (json/read-field post "missing")))
      (is (nil? (json/read-field (utf8 "[{\"id\":1}]") "id")))
      (is (nil? (json/read-field (utf8 "") "id")))
      (is (nil? (json/read-field (utf8 "{\"id\":") "id")))
      (is (nil? (json/read-field (utf8 "not json") "id")))
      (is (nil? (json/read-field (utf8 "{\"a\":[1,") "id"))))))

(deftest sentences-from-the-array-are-those-of-the-vector
  (let [v (words/dictionary 2000 3)
        a (words/dictionary-array v)
        draw (fn [dict] (let [r (Random. 11)] [(words/sentence r dict 150) (words/sentence r dict 1) (words/pick r dict)
                                               (words/sentence r dict 0) (.nextInt r)]))]
    (is (= (draw v) (draw a)))
    (is (= 150 (count (.split ^String (first (draw a)) " "))))))
