(ns herald.feed.store.search-hidden-bench-test
  "A store-level benchmark of search pages with the searcher's hidden set (issue 11) on the embedded store (Lucene:
  a MUST_NOT on the `from` doc values), not a timed test: n posts of one common word from 1,000 senders, then pages
  of 50 with hidden sets of 0, 10, 100 and 900 senders (900: most hits are hidden, the page still fills). Run:
  mvn -o -q -pl feed -am test -Dherald.test.ns='.*search-hidden-bench.*' -Dherald.test.include=benchmark -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false
  (-Dherald.bench.posts=50000)"
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.fixtures :as fx])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(deftest ^:benchmark search-pages-with-a-hidden-set
  (let [n (Long/getLong "herald.bench.posts" 50000)
        st (fx/open-embedded)]
    (try
      (let [senders (vec (map :id (repeatedly 1000 #(graph/create-participant! st "p"))))
            posts (vec (for [i (range n)]
                         (feeds/publish! st (post-of (senders (mod i 1000)) (str "common word w" (rand-int 40000) " n" i)) [])))]
        (doseq [batch (partition-all 500 posts)] (search/index-batch! st (vec batch)))
        (search/refresh-search! st)
        (doseq [k [0 10 100 900 0 10 100 900]                 ; the first round warms up
                :let [hidden (set (take k senders))
                      h (Histogram. 3)]]
          (dotimes [_ 500]
            (let [t0 (System/nanoTime)
                  {:keys [items]} (search/search-page st "common" {:limit 50 :hidden hidden})]
              (.recordValue h (max 1 (quot (- (System/nanoTime) t0) 1000)))
              (is (= 50 (count items)))
              (is (not-any? (comp hidden :from) items))))
          (println (format "search-hidden-bench posts=%d hidden=%d n=%d p50_us=%d p99_us=%d"
                           n k (.getTotalCount h) (.getValueAtPercentile h 50.0) (.getValueAtPercentile h 99.0)))))
      (finally (fx/close-embedded! st)))))
