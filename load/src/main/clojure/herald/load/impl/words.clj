(ns herald.load.impl.words
  "A deterministic dictionary of pronounceable pseudo-words (40,000 by default, like the reference
  tester's) and random subjects and stories drawn from it."
  (:require [clojure.string :as str])
  (:import (java.nio.charset StandardCharsets)
           (java.util Arrays Random)))

(set! *warn-on-reflection* true)

(def ^:private onsets ["b" "c" "d" "f" "g" "h" "j" "k" "l" "m" "n" "p" "r" "s" "t" "v" "w" "z" "br" "ch" "cl" "dr" "fl" "gr" "pl" "qu" "sh" "st" "th" "tr"])
(def ^:private vowels ["a" "e" "i" "o" "u" "ai" "ea" "ie" "oo" "ou"])
(def ^:private codas ["" "" "" "n" "r" "s" "t" "l" "m" "nd" "st" "ck"])

(defn- syllable [^Random r]
  (str (onsets (.nextInt r (count onsets))) (vowels (.nextInt r (count vowels))) (codas (.nextInt r (count codas)))))

(defn dictionary
  "A vector of `n` distinct lower-case pseudo-words, the same for the same `seed`."
  ([] (dictionary 40000 42))
  ([n seed]
   (let [r (Random. seed)]
     (loop [seen (transient #{}) out (transient [])]
       (if (= n (count out))
         (persistent! out)
         (let [w (apply str (repeatedly (+ 2 (.nextInt r 3)) #(syllable r)))]
           (if (seen w) (recur seen out) (recur (conj! seen w) (conj! out w)))))))))

(deftype Packed [^bytes data ^ints offsets])

(defn packed-dictionary
  "`dict` (a vector of ASCII words) packed for `sentence` and `pick` on the hot path: every word's bytes in one
  array and their offsets in another. A 150-word sentence then costs 7-10 us against 17-26 us from a String
  array (one JVM, load 6-10): its words are read from two small arrays, not from 40,000 Strings spread over the heap
  (a cache miss or more per word). A word that is not ASCII is a :herald.load/bad-dictionary ex-info."
  ^Packed [dict]
  (let [n (count dict)
        offsets (int-array (inc n))
        out (java.io.ByteArrayOutputStream. (* 8 n))]
    (dotimes [i n]
      (let [^String w (nth dict i)]
        (when-not (every? #(< (int %) 128) w)
          (throw (ex-info (str "dictionary word is not ASCII: " (pr-str w)) {:type :herald.load/bad-dictionary :word w})))
        (aset offsets i (.size out))
        (.writeBytes out (.getBytes w StandardCharsets/US_ASCII))))
    (aset offsets n (.size out))
    (Packed. (.toByteArray out) offsets)))

(defn- packed-sentence
  "`k` words of `p` drawn with `r`, joined by spaces, built as Latin-1 bytes (the words are ASCII)."
  ^String [^Random r ^Packed p ^long k]
  (let [^bytes data (.-data p) ^ints offsets (.-offsets p) n (dec (alength offsets))]
    (loop [i 0 pos 0 buf (byte-array (* 16 k))]
      (if (= i k)
        (String. buf 0 (int (max 0 (dec pos))) StandardCharsets/ISO_8859_1)
        (let [w (.nextInt r n) from (aget offsets w) len (- (aget offsets (inc w)) from)
              end (+ pos len 1)
              ^bytes buf (if (> end (alength buf)) (Arrays/copyOf buf (int (* 2 end))) buf)]
          (System/arraycopy data from buf pos len)
          (aset buf (+ pos len) (byte 32))
          (recur (inc i) end buf))))))

(defn sentence
  "`k` random words of `dict` (a vector, or for speed a `packed-dictionary`) joined by spaces; draws `k` ints from
  `r` in order, the same words for the same `r` whichever the form of `dict`."
  [^Random r dict k]
  (if (instance? Packed dict)
    (packed-sentence r dict (long k))
    (str/join " " (repeatedly k #(nth dict (.nextInt r (count dict)))))))

(defn pick
  "One random word of `dict` (a vector or a `packed-dictionary`), drawing one int from `r`."
  ^String [^Random r dict]
  (if (instance? Packed dict)
    (let [^Packed p dict ^ints offsets (.-offsets p)
          w (.nextInt r (dec (alength offsets))) from (aget offsets w)]
      (String. ^bytes (.-data p) from (int (- (aget offsets (inc w)) from)) StandardCharsets/ISO_8859_1))
    (nth dict (.nextInt r (count dict)))))
