(ns herald.feed.store.text
  "Text analysis shared by every search backend: Lucene's StandardAnalyzer (UAX#29 words, lower-cased)."
  (:import (org.apache.lucene.analysis Analyzer Analyzer$TokenStreamComponents LowerCaseFilter TokenStream Tokenizer)
           (org.apache.lucene.analysis.core WhitespaceTokenizer)
           (org.apache.lucene.analysis.standard StandardAnalyzer)
           (org.apache.lucene.analysis.tokenattributes CharTermAttribute)))

(set! *warn-on-reflection* true)

(def ^Analyzer analyzer
  "The analyzer for indexing and queries (thread-safe, no stop words)."
  (StandardAnalyzer.))

(def ^:private ^Analyzer plain-analyzer
  "Whitespace-separated tokens, lower-cased: the same terms as analyzer on plain text (see plain-text?), at
  a fraction of the cost of StandardTokenizer's UAX#29 state machine."
  (proxy [Analyzer] []
    (createComponents [_]
      (let [t (WhitespaceTokenizer.)]
        (Analyzer$TokenStreamComponents. ^Tokenizer t ^TokenStream (LowerCaseFilter. t))))))

(def field
  "The one indexed text field: subject and story."
  "text")

(def ^:private ^:const max-word
  "StandardTokenizer's (and WhitespaceTokenizer's) longest token; longer runs are split differently."
  255)

(defn plain-text?
  "True when s holds only ASCII letters and digits, in runs of at most 255 characters, separated by spaces,
  tabs and line breaks. On such text UAX#29 word boundaries are exactly the whitespace (letters and digits
  join, WB5/WB8-WB10), so splitting at whitespace and lower-casing gives StandardAnalyzer's terms."
  [^String s]
  (let [n (.length s)]
    (loop [i 0 run 0]
      (if (= i n)
        true
        (let [c (.charAt s i)]
          (cond (or (and (>= (int c) 97) (<= (int c) 122)) (and (>= (int c) 65) (<= (int c) 90))
                    (and (>= (int c) 48) (<= (int c) 57)))
                (if (< run max-word) (recur (inc i) (inc run)) false)
                (or (= c \space) (= c \newline) (= c \tab) (= c \return)) (recur (inc i) 0)
                :else false))))))

(defn index-tokens
  "The token stream that indexes s in field: analyzer's terms, taken by a whitespace tokenizer when s is
  plain-text?. The stream is the calling thread's reusable one: consume it (IndexWriter.addDocument)
  before the next call on the same thread."
  ^TokenStream [^String field-name ^String s]
  (.tokenStream (if (plain-text? s) plain-analyzer analyzer) field-name s))

(defn post-text
  "The text of a post that search sees: subject, a newline, story."
  ^String [post]
  (str (:subject post) "\n" (:story post)))

(defn- stream-terms
  "Every term of stream, in order (repeats kept)."
  [^TokenStream ts]
  (with-open [ts ts]
    (let [attr (.addAttribute ts CharTermAttribute)]
      (.reset ts)
      (loop [acc (transient [])]
        (if (.incrementToken ts)
          (recur (conj! acc (str attr)))
          (do (.end ts) (persistent! acc)))))))

(defn index-terms
  "Every term index-tokens gives for s, in order (repeats kept): for tests."
  [^String s]
  (stream-terms (index-tokens field s)))

(defn terms
  "The distinct terms of s as analysed for search, in order of first occurrence."
  [^String s]
  (into [] (distinct) (stream-terms (.tokenStream analyzer ^String field s))))
