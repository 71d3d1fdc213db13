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

(defn sentence
  "`k` random words of `dict` joined by spaces."
  [^Random r dict k]
  (str/join " " (repeatedly k #(nth dict (.nextInt r (count dict))))))
