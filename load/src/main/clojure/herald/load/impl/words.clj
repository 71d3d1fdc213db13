(ns herald.load.impl.words
  "A deterministic dictionary of pronounceable pseudo-words (40,000 by default, like the reference
  tester's) and random subjects and stories drawn from it."
  (:require [clojure.string :as str])
  (:import (java.util Random)))

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

(def ^:private ^Class string-array (Class/forName "[Ljava.lang.String;"))

(defn sentence
  "`k` random words of `dict` (a vector, or for speed a String array as `dictionary-array` makes) joined by
  spaces; draws `k` ints from `r` in order, the same words for the same `r` either way."
  [^Random r dict k]
  (if (instance? string-array dict)
    (let [^"[Ljava.lang.String;" words dict
          n (alength words)
          sb (StringBuilder. (int (* 12 (long k))))]
      (dotimes [i k]
        (when (pos? i) (.append sb \space))
        (.append sb (aget words (.nextInt r n))))
      (.toString sb))
    (str/join " " (repeatedly k #(nth dict (.nextInt r (count dict)))))))

(defn dictionary-array
  "`dict` as a String array (for `sentence` on the hot path: no lazy sequences, no vector walks)."
  ^"[Ljava.lang.String;" [dict]
  (into-array String dict))

(defn pick
  "One random word of `dict` (a vector or a String array), drawing one int from `r`."
  ^String [^Random r dict]
  (if (instance? string-array dict)
    (let [^"[Ljava.lang.String;" words dict] (aget words (.nextInt r (alength words))))
    (nth dict (.nextInt r (count dict)))))
