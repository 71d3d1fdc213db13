(ns herald.feed.store.opensearch-bench-test
  "Throughput of the OpenSearch search backend on the test node (^:benchmark: run with
  -Dherald.test.include=benchmark): bulk and single indexing of reference-sized posts, then single-word searches.
  Prints one line `opensearch-bench key=value ...`."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
            [herald.feed.store.search :as search]
            [herald.feed.store.opensearch-test :as ot]))

(set! *warn-on-reflection* true)

(defn- words [^java.util.Random r vocab n]
  (str/join " " (repeatedly n #(nth vocab (.nextInt r (count vocab))))))

(defn- percentile [sorted-ns q]
  (/ (double (nth sorted-ns (min (dec (count sorted-ns)) (long (* q (count sorted-ns)))))) 1e6))

(deftest ^:benchmark opensearch-throughput
  (ot/with-node
    (let [r (java.util.Random. 42)
          vocab (vec (for [i (range 40000)] (str "w" (Integer/toString (* 7919 i) 36))))
          n-bulk 20000 n-single 1000 n-search 2000
          post (fn [id] {:id id :from (inc (.nextInt r 1000)) :ts (* 1000 id) :occurred "2026-11-22"
                         :subject (words r vocab 5) :story (words r vocab 150)})
          bulk-posts (mapv post (range 1 (inc n-bulk)))
          single-posts (mapv post (range (inc n-bulk) (+ n-bulk n-single 1)))
          st (ot/open-fresh {:max-lag-ms nil})]
      (try
        (let [t0 (System/nanoTime)
              _ (run! #(search/index-batch! st %) (partition-all 500 bulk-posts))
              t1 (System/nanoTime)
              _ (run! #(search/index! st %) single-posts)
              t2 (System/nanoTime)
              _ (search/refresh-search! st)
              lat (long-array n-search)
              hits (volatile! 0)
              t3 (System/nanoTime)]
          (dotimes [i n-search]
            (let [q (nth vocab (.nextInt r (count vocab)))
                  a (System/nanoTime)]
              (vswap! hits + (count (search/search st q {:limit 100})))
              (aset lat i (- (System/nanoTime) a))))
          (let [t4 (System/nanoTime)
                sorted (vec (sort (vec lat)))
                line (format "opensearch-bench bulk_posts_per_s=%.0f single_posts_per_s=%.0f searches_per_s=%.0f search_p50_ms=%.2f search_p99_ms=%.2f hits_per_search=%.1f load1=%.1f"
                             (/ n-bulk (/ (- t1 t0) 1e9)) (/ n-single (/ (- t2 t1) 1e9))
                             (/ n-search (/ (- t4 t3) 1e9)) (percentile sorted 0.5) (percentile sorted 0.99)
                             (/ (double @hits) n-search)
                             (.getSystemLoadAverage (java.lang.management.ManagementFactory/getOperatingSystemMXBean)))]
            (println line)
            (is (= (+ n-bulk n-single) (:indexed-posts (s/stats st))))
            (is (pos? (long @hits)) "single words of a 40,000-word vocabulary do match")))
        (finally (ot/drop! st))))))
