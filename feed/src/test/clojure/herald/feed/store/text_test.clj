(ns herald.feed.store.text-test
  "The indexing fast path for plain text gives exactly StandardAnalyzer's terms."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.feed.store.text :as text])
  (:import (org.apache.lucene.analysis TokenStream)
           (org.apache.lucene.analysis.tokenattributes CharTermAttribute)))

(set! *warn-on-reflection* true)

(defn- standard-terms
  "Every term of StandardAnalyzer for s, in order (repeats kept)."
  [^String s]
  (with-open [^TokenStream ts (.tokenStream text/analyzer ^String text/field s)]
    (let [attr (.addAttribute ts CharTermAttribute)]
      (.reset ts)
      (loop [acc []] (if (.incrementToken ts) (recur (conj acc (str attr))) (do (.end ts) acc))))))

(def ^:private gen-char
  "Mostly plain characters (ASCII letters, digits, whitespace), sometimes one UAX#29 treats specially."
  (gen/frequency [[30 (gen/elements (map char (concat (range 97 123) (range 65 91))))]
                  [6 (gen/elements (map char (range 48 58)))]
                  [10 (gen/elements [\space \space \newline \tab \return])]
                  [1 (gen/elements [\. \, \' \_ \- \: \; \é \ß \Ж \日 \u00A0 \u2019 \! \/])]]))

(defspec plain-fast-path-matches-standard-analyzer 300
  (prop/for-all [s (gen/fmap str/join (gen/vector gen-char 0 80))]
    (= (standard-terms s) (text/index-terms s))))

(deftest plain-text-detection
  (is (text/plain-text? "five random words here\nand a story 2026 abc123 123abc"))
  (is (text/plain-text? ""))
  (is (not (text/plain-text? "can't")) "an apostrophe joins letters in UAX#29")
  (is (not (text/plain-text? "e.g")))
  (is (not (text/plain-text? "a_b")))
  (is (not (text/plain-text? "Köln")))
  (is (not (text/plain-text? "a\u00A0b")) "only ASCII whitespace")
  (is (text/plain-text? (apply str (repeat 255 \x))))
  (is (not (text/plain-text? (apply str (repeat 256 \x)))) "runs longer than a token take the standard path"))

(deftest fast-path-examples
  (doseq [s ["The Quick brown FOX\njumps 42 times, over 3.14 dogs" "can't stop" "a_b c-d e.f 1,000"
             (str (apply str (repeat 300 \y)) " z") "Köln Straße 日本語の記事" "plain words only\r\nhere"]]
    (is (= (standard-terms s) (text/index-terms s)) s)))
