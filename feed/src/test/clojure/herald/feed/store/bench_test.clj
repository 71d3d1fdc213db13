(ns herald.feed.store.bench-test
  "A store-level write benchmark (not a timed test): publish + fan-out to 3 friends + index, many threads,\n  after a 3 s warm-up. Run: mvn -o -q -pl feed test -Dherald.test.ns='.*store.bench.*' -Dherald.test.include=benchmark"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
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

(defn- run [st threads seconds]
  (let [senders (mapv :id (repeatedly 200 #(s/create-participant! st "sender")))
        stories (vec (repeatedly 500 #(sentence 150)))
        subjects (vec (repeatedly 500 #(sentence 5)))
        hist (ConcurrentHistogram. 3)
        n (AtomicLong.)
        stop (+ (System/nanoTime) (* seconds 1000000000))
        gate (CountDownLatch. 1)
        worker (fn [] (.await gate)
                 (while (< (System/nanoTime) stop)
                   (let [t0 (System/nanoTime)
                         from (rand-nth senders)
                         rs (vec (take 3 (shuffle senders)))
                         p (s/publish! st {:from from :occurred "2026-11-22" :subject (rand-nth subjects)
                                           :story (rand-nth stories)} rs)]
                     (s/index! st p)
                     (s/fan-out! st p rs)
                     (.recordValue hist (quot (- (System/nanoTime) t0) 1000))
                     (.incrementAndGet n))))
        cpu0 (cpu-nanos)
        futs (doall (repeatedly threads #(future (worker))))]
    (.countDown gate)
    (run! deref futs)
    (let [cpu (- (cpu-nanos) cpu0)]
    (let [searches (AtomicLong.) t0 (System/nanoTime)]
      (dotimes [_ 2000] (s/search st (rand-nth words)) (.incrementAndGet searches))
      {:posts-per-s (quot (.get n) seconds) :cpu-us-per-post (quot cpu (* 1000 (max 1 (.get n)))) :p50-us (.getValueAtPercentile hist 50.0)
       :p99-us (.getValueAtPercentile hist 99.0)
       :searches-per-s (long (/ 2000 (/ (- (System/nanoTime) t0) 1e9)))}))))

(deftest ^:benchmark embedded-store-write-throughput
  (let [threads (Long/getLong "herald.bench.threads" 4) seconds (Long/getLong "herald.bench.seconds" 10)
        st (fx/open-embedded {:block-cache-mb 64 :write-buffer-mb 32 :index-ram-mb 64})]
    (try
      (run st threads 3)
      (let [r (run st threads seconds)]
        (println (format "store-bench threads=%d seconds=%d story_words=150 friends=3 posts_per_s=%d cpu_us_per_post=%d p50_us=%d p99_us=%d searches_per_s=%d cores=%d jvm=%s"
                         threads seconds (:posts-per-s r) (:cpu-us-per-post r) (:p50-us r) (:p99-us r) (:searches-per-s r)
                         (.availableProcessors (Runtime/getRuntime)) (System/getProperty "java.version")))
        (is (pos? (:posts-per-s r))))
      (finally (fx/close-embedded! st)))))
