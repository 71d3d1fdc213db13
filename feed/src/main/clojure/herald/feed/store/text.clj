(ns herald.feed.store.text
  "Text analysis shared by every search backend: UAX#29 words (Lucene's StandardTokenizer), lower-cased with Greek folded (final sigma, tonos)."
  (:import (org.apache.lucene.analysis Analyzer Analyzer$TokenStreamComponents TokenStream)
           (org.apache.lucene.analysis.el GreekLowerCaseFilter)
           (org.apache.lucene.analysis.standard StandardTokenizer)
           (org.apache.lucene.analysis.tokenattributes CharTermAttribute)))

(set! *warn-on-reflection* true)

(def ^Analyzer analyzer
  "The analyzer for indexing and queries (thread-safe, no stop words): StandardTokenizer words, lower-cased
  per code point as StandardAnalyzer does, plus Greek folding so a word matches across case: final sigma
  is sigma (ΟΔΥΣΣΕΑΣ finds οδυσσεας) and tonos is dropped (ΣΙΣΥΦΟΣ finds σίσυφος)."
  (proxy [Analyzer] []
    (createComponents [_field]
      (let [tokenizer (StandardTokenizer.)]
        (Analyzer$TokenStreamComponents. tokenizer (GreekLowerCaseFilter. tokenizer))))
    (normalize [_field ^TokenStream in] (GreekLowerCaseFilter. in))))

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
