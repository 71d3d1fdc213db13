(ns herald.feed.store.text
  "Text analysis shared by every search backend: Lucene's StandardAnalyzer (UAX#29 words, lower-cased)."
  (:import (org.apache.lucene.analysis Analyzer TokenStream)
           (org.apache.lucene.analysis.standard StandardAnalyzer)
           (org.apache.lucene.analysis.tokenattributes CharTermAttribute)))

(set! *warn-on-reflection* true)

(def ^Analyzer analyzer
  "The analyzer for indexing and queries (thread-safe, no stop words)."
  (StandardAnalyzer.))

(def field
  "The one indexed text field: subject and story."
  "text")

(defn post-text
  "The text of a post that search sees: subject, a newline, story."
  ^String [post]
  (str (:subject post) "\n" (:story post)))

(defn terms
  "The distinct terms of s as analysed for search, in order of first occurrence."
  [^String s]
  (with-open [^TokenStream ts (.tokenStream analyzer ^String field s)]
    (let [attr (.addAttribute ts CharTermAttribute)]
      (.reset ts)
      (loop [acc (transient []) seen #{}]
        (if (.incrementToken ts)
          (let [t (str attr)]
            (if (seen t) (recur acc seen) (recur (conj! acc t) (conj seen t))))
          (do (.end ts) (persistent! acc)))))))
