(ns herald.flow.docs-test
  "The Quick start of docs/flow.md, evaluated as written: every form in its ```clojure blocks runs, and every `;=>` result it shows is checked."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]])
  (:import (clojure.lang LineNumberingPushbackReader)
           (java.io StringReader)))

(set! *warn-on-reflection* true)

(defn- docs-file ^java.io.File []
  (let [f (io/file (System/getProperty "user.dir") "../docs/flow.md")]
    (if (.exists f) f (io/file "docs/flow.md"))))

(defn- section
  "The text of the `## title` section of `md`, up to the next `## ` heading."
  [md title]
  (second (re-find (re-pattern (str "(?s)\n## " title "\n(.*?)(?=\n## |\\z)")) md)))

(defn clojure-blocks
  "The bodies of the ```clojure fenced blocks of `text`."
  [text]
  (map second (re-seq #"(?s)```clojure\n(.*?)\n```" text)))

(defn forms-with-results
  "[form expected-text-or-nil] for every top-level form of `code`; the expected text is what follows `;=>` on
  the line where the form ends."
  [code]
  (let [lines (str/split-lines code)
        r (LineNumberingPushbackReader. (StringReader. code))]
    (loop [out []]
      (let [form (read {:eof ::eof} r)]
        (if (= ::eof form)
          out
          (let [line (nth lines (dec (.getLineNumber r)) "")]
            (recur (conj out [form (some->> line (re-find #";=>\s*(.*)$") second str/trim)]))))))))

(defn parse-expected
  "The value a `;=>` text shows, `...` read as: more keys when it closes a map, any one value elsewhere (`_`)."
  [text]
  (read-string (-> text (str/replace #"\.\.\.(?=\s*\})" "") (str/replace "..." "_"))))

(defn matches?
  "True when `actual` is what `expected` shows: maps by their shown keys, `_` for any value, sequences element by
  element, anything else by equality."
  [expected actual]
  (cond (= '_ expected) true
        (map? expected) (and (map? actual)
                             (every? (fn [[k v]] (and (contains? actual k) (matches? v (get actual k)))) expected))
        (sequential? expected) (and (sequential? actual) (= (count expected) (count actual))
                                    (every? true? (map matches? expected actual)))
        :else (= expected actual)))

(deftest the-matcher-reads-the-docs-notation
  (is (matches? (parse-expected "{:status :completed ...}") {:status :completed :error nil}))
  (is (not (matches? (parse-expected "{:status :completed ...}") {:status :failed})))
  (is (matches? (parse-expected "{:a {:b 1 :c ... :d {...}} ...}") {:a {:b 1 :c 2.5 :d {:x 1}} :z 0}))
  (is (not (matches? (parse-expected "{:a {:b 1 :c ... :d {...}} ...}") {:a {:b 1 :d {:x 1}}})) "a shown key must be there")
  (is (not (matches? (parse-expected "(1 2 3)") [1 2]))))

(deftest quick-start-runs-as-written
  (let [f (docs-file)]
    (if-not (.exists f)
      (clojure.test/do-report {:type :skip :message "docs/flow.md not found from the working directory"})
      (let [blocks (clojure-blocks (section (slurp f) "Quick start"))
            forms (mapcat forms-with-results blocks)
            checks (filter second forms)
            run (future
                  (binding [*ns* (create-ns 'herald.flow.docs-test.scratch)]
                    (refer-clojure)
                    (mapv (fn [[form expected]] [form expected (eval form)]) forms)))
            results (deref run 60000 ::timeout)]
        (is (seq blocks) "the Quick start has ```clojure blocks")
        (is (<= 4 (count checks)) "the Quick start shows its results with ;=>")
        (is (not= ::timeout results) "the Quick start finished within 60 s")
        (when (vector? results)
          (doseq [[form expected v] results :when expected]
            (testing (pr-str form)
              (is (matches? (parse-expected expected) v) (str "docs show " expected ", got " (pr-str v))))))
        (doseq [n (filter #(or (str/starts-with? (name %) "my.") (= 'herald.flow.docs-test.scratch %))
                          (map ns-name (all-ns)))]
          (remove-ns n))))))
