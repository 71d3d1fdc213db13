(ns herald.feed.store.bench-test
  "A store-level benchmark (not a timed test): writer threads publish + index + fan out to 3 friends while
  searcher threads search one dictionary word each, after an 8 s warm-up. Run:
  mvn -o -q -pl feed test -Dherald.test.ns='.*store.bench.*' -Dherald.test.include=benchmark
  (-Dherald.bench.threads=2 -Dherald.bench.searchers=1 -Dherald.bench.seconds=10 -Dherald.bench.max-lag-ms=1000)"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.fixtures :as fx])
  (:import (java.util.concurrent CountDownLatch)
           (java.util.concurrent.atomic AtomicLong)
           (org.HdrHistogram ConcurrentHistogram)))

(set! *warn-on-reflection* true)

(def ^:private words
  (vec (for [i (range 40000)] (str (char (+ 97 (mod i 26))) (Integer/toString i 36) "w"))))

(defn- sentence [n] (str/join " " (repeatedly n #(rand-nth words))))

(defn- cpu-nanos
  "CPU time used by this JVM so far (all threads, including RocksDB's and Lucene's background work)."
  ^long []
  (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean
                      (java.lang.management.ManagementFactory/getOperatingSystemMXBean)))

(defn- timed [^ConcurrentHistogram h f]
  (let [t0 (System/nanoTime)] (f) (.recordValue h (quot (- (System/nanoTime) t0) 1000))))

(defn- in-threads [n ^CountDownLatch gate f]
  (doall (repeatedly n #(future (.await gate) (f)))))

(defn- run [st {:keys [threads searchers seconds]}]
  (let [senders (mapv :id (repeatedly 200 #(graph/create-participant! st "sender")))
        stories (vec (repeatedly 500 #(sentence 150)))
        subjects (vec (repeatedly 500 #(sentence 5)))
        posts (ConcurrentHistogram. 3) searches (ConcurrentHistogram. 3)
        stop (+ (System/nanoTime) (* seconds 1000000000))
        gate (CountDownLatch. 1)
        write (fn [] (let [from (rand-nth senders) rs (mapv #(senders (mod (+ (long from) (long %)) 200)) [1 7 13])
                           p (feeds/publish! st {:from from :occurred "2026-11-22" :subject (rand-nth subjects)
                                             :story (rand-nth stories)} rs)]
                       (search/index! st p)
                       (feeds/fan-out! st p rs)))
        cpu0 (cpu-nanos)
        futs (concat (in-threads threads gate #(while (< (System/nanoTime) stop) (timed posts write)))
                     (in-threads searchers gate #(while (< (System/nanoTime) stop)
                                                   (timed searches (fn [] (search/search st (rand-nth words)))))))]
    (.countDown gate)
    (run! deref futs)
    (let [cpu (- (cpu-nanos) cpu0) n (.getTotalCount posts)]
      {:posts-per-s (quot n seconds) :cpu-us-per-post (quot cpu (* 1000 (max 1 n)))
       :p50-us (.getValueAtPercentile posts 50.0) :p99-us (.getValueAtPercentile posts 99.0)
       :searches-per-s (quot (.getTotalCount searches) seconds)
       :search-p99-us (.getValueAtPercentile searches 99.0)})))

(deftest ^:benchmark embedded-store-write-throughput
  (let [opts {:threads (Long/getLong "herald.bench.threads" 2) :searchers (Long/getLong "herald.bench.searchers" 1)
              :seconds (Long/getLong "herald.bench.seconds" 10)}
        lag (Long/getLong "herald.bench.max-lag-ms" 1000)
        st (fx/open-embedded {:block-cache-mb 64 :write-buffer-mb 32 :index-ram-mb 64 :search-max-lag-ms lag})]
    (try
      (run st (assoc opts :seconds 8))
      (let [r (run st opts)]
        (println (format (str "store-bench writers=%d searchers=%d seconds=%d max_lag_ms=%d story_words=150 friends=3"
                              " posts_per_s=%d cpu_us_per_post=%d p50_us=%d p99_us=%d searches_per_s=%d search_p99_us=%d"
                              " cores=%d jvm=%s gc=%s")
                         (:threads opts) (:searchers opts) (:seconds opts) lag (:posts-per-s r) (:cpu-us-per-post r)
                         (:p50-us r) (:p99-us r) (:searches-per-s r) (:search-p99-us r)
                         (.availableProcessors (Runtime/getRuntime)) (System/getProperty "java.version")
                         (str/join "+" (map #(.getName ^java.lang.management.GarbageCollectorMXBean %)
                                            (java.lang.management.ManagementFactory/getGarbageCollectorMXBeans)))))
        (is (pos? (:posts-per-s r))))
      (finally (fx/close-embedded! st)))))
