(ns herald.feed.store.edits-bench-test
  "A store-level benchmark of edits and deletes on the embedded store (issue 11), not a timed test: one thread edits
  then deletes posts already fanned out to 3 friends and indexed, after a warm-up, and reads inbound pages where
  half the posts are deleted. Run:
  mvn -o -q -pl feed -am test -Dherald.test.ns='.*edits-bench.*' -Dherald.test.include=benchmark -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false
  (-Dherald.bench.posts=20000)"
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.fixtures :as fx])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- timed [^Histogram h f]
  (let [t0 (System/nanoTime) r (f)] (.recordValue h (max 1 (quot (- (System/nanoTime) t0) 1000))) r))

(defn- line [what ^Histogram h]
  (println (format "edits-bench %s n=%d p50_us=%d p99_us=%d max_us=%d" what (.getTotalCount h)
                   (.getValueAtPercentile h 50.0) (.getValueAtPercentile h 99.0) (.getMaxValue h))))

(deftest ^:benchmark edits-and-deletes-on-the-embedded-store
  (let [n (Long/getLong "herald.bench.posts" 20000)
        st (fx/open-embedded)]
    (try
      (let [[a b c d] (map :id (repeatedly 4 #(graph/create-participant! st "p")))
            story (apply str (interpose " " (repeatedly 150 #(str "w" (rand-int 40000)))))
            posts (vec (for [i (range n)] (feeds/publish! st (post-of a (str story " n" i)) [b c d])))]
        (doseq [batch (partition-all 256 posts)]
          (feeds/fan-out-all! st (mapv #(hash-map :post % :recipients [b c d]) batch))
          (search/index-batch! st (vec batch)))
        (search/refresh-search! st)
        (let [half (quot n 2)
              warm (quot n 10)
              he (Histogram. 3) hd (Histogram. 3) hr (Histogram. 3)]
          ;; warm-up on the first tenth, measured on the rest of each half
          (doseq [p (subvec posts 0 warm)] (s/edit-post! st (:id p) {:story "warm edited"}))
          (doseq [p (subvec posts warm half)] (timed he #(s/edit-post! st (:id p) {:story (str "edited " (:id p))})))
          ;; delete every other post of the second half: inbound pages then skip one deleted post per shown one
          (doseq [p (take-nth 2 (subvec posts half))] (timed hd #(s/delete-post! st (:id p))))
          (dotimes [_ 2000] (timed hr #(feeds/inbound st b {:limit 50})))
          (line "edit" he)
          (line "delete" hd)
          (line "inbound-page-50-half-deleted" hr)
          (is (= 50 (count (:items (feeds/inbound st b {:limit 50})))))))
      (finally (fx/close-embedded! st)))))
