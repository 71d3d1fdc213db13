(ns herald.load.words-test
  "The packed dictionary draws the very words of the vector it packs."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.load.impl.words :as words])
  (:import (java.util Random)))

(set! *warn-on-reflection* true)

(defn- draw
  "Sentences of 150, 5, 1 and 0 words, a picked word and the next int, all from one Random seeded 11."
  [dict]
  (let [r (Random. 11)]
    [(words/sentence r dict 150) (words/sentence r dict 5) (words/sentence r dict 1) (words/pick r dict)
     (words/sentence r dict 0) (.nextInt r)]))

(deftest sentences-from-the-packed-dictionary-are-those-of-the-vector
  (let [v (words/dictionary 40000 1)
        p (words/packed-dictionary v)]
    (is (= (draw v) (draw p)))
    (is (= 150 (count (.split ^String (first (draw p)) " "))))
    (testing "words longer than the first buffer's guess (16 bytes a word) make it grow, and stay whole"
      (let [long-words (mapv #(apply str % (repeat 40 "x")) ["a" "b" "c"])]
        (is (= (draw long-words) (draw (words/packed-dictionary long-words))))))))

(deftest a-word-that-is-not-ascii-is-refused
  (let [e (try (words/packed-dictionary ["tea" "café"]) nil (catch clojure.lang.ExceptionInfo e e))]
    (is (= :herald.load/bad-dictionary (:type (ex-data e))))
    (is (= "café" (:word (ex-data e))))))
