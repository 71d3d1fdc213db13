(ns herald.feed.jobs-bench-test
  "^:benchmark The request-path cost of the background work (the herald.flow jobs, in-process) in one JVM: recording a request (the per-minute job's enqueue), submitting a post's fan-out and a whole publish! on the embedded store, with and without the background writes; and posts/s with the background work finished. Run by hand: mvn -o -q -pl feed test -Dherald.test.include=benchmark -Dherald.test.ns='herald\\.feed\\.jobs-bench-test'"
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.perf :as perf]
            [herald.feed.service :as svc]
            [herald.feed.store :as store]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.search :as search]
            [herald.feed.test-util :as u])
  (:import (java.lang.management ManagementFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^java.lang.management.ThreadMXBean tmx (ManagementFactory/getThreadMXBean))
(defn- thread-cpu ^long [] (.getCurrentThreadCpuTime tmx))
(defn- job-cpu
  "CPU time of the per-minute job's threads (named herald-flow-feed-perf-...)."
  ^long []
  (reduce + 0 (for [^Thread t (keys (Thread/getAllStackTraces))
                    :when (.startsWith (.getName t) "herald-flow-feed-perf")]
                (max 0 (.getThreadCpuTime tmx (.threadId t))))))

(defn- median [xs] (nth (sort xs) (quot (count xs) 2)))

(defn- record-round
  "[request-thread-cpu-ns job-thread-cpu-ns] per record over `n` records, the recorder caught up at the end."
  [r n]
  (let [p0 (job-cpu) c0 (thread-cpu) at (System/currentTimeMillis)]
    (dotimes [i n] (perf/record! r :outbound :post (* 1000 (inc (mod i 5000))) 200 at))
    (let [c (- (thread-cpu) c0)]
      (perf/await-recorded r 60000)
      [(/ (double c) n) (/ (double (- (job-cpu) p0)) n)])))

(defn- submit-round [f n]
  (let [c0 (thread-cpu)]
    (dotimes [i n] (fanout/submit! f {:post {:id (inc i) :from 1 :ts (inc i)} :recipients [2]}))
    (let [c (- (thread-cpu) c0)] (fanout/await-idle f 60000) (/ (double c) n))))

(def ^:private noop-store
  (reify feeds/InboundStore (-fan-out! [_ _ _]) search/SearchIndex (-index-batch! [_ _]) (-index! [_ _])))

(defn- publish-round [ctx ids story n]
  (let [c0 (thread-cpu)]
    (dotimes [i n]
      (svc/publish! ctx (nth ids (mod i (count ids))) {:subject "five words of a subject" :story story :occurred "2026-11-22"}))
    (let [c (- (thread-cpu) c0)] (fanout/await-idle (:fanout ctx) 120000) (/ (double c) n 1000.0))))

(defn- publish-setup
  "A service context on an embedded store in `dir` with the fan-out jobs; with `noop?` the background work
  writes nothing (the publish! path alone, without the background writes competing for the store)."
  [dir noop?]
  (let [s (store/open-store {:type :embedded :data-dir dir})
        f (posts/flow-fanout (if noop? noop-store s) {})
        ctx (svc/context s f {})
        ids (vec (for [i (range 10)] (:id (svc/create-participant! ctx {:name (str "p" i)}))))]
    (doseq [i (range 10) j (range 1 4)] (svc/befriend! ctx (ids i) {:to (svc/link (ids (mod (+ i j) 10)))}))
    [ctx ids]))

(defn- fmt [x] (format "%.1f" (double x)))

(deftest ^:benchmark request-path-cost
  (let [job (jperf/flow-recorder)
        fl (posts/flow-fanout noop-store {})
        dirs (vec (for [d ["fl" "fln"]] (u/temp-dir (str "bench-" d))))
        [[cf ids] [cfn _]] (map publish-setup dirs [false true])
        story (str/join " " (repeat 150 "lorem"))
        rounds 7]
    (try
      (dotimes [_ 3] (record-round job 50000) (submit-round fl 5000)
                     (publish-round cf ids story 1000) (publish-round cfn ids story 1000))
      (let [rs (vec (for [_ (range rounds)]
                      {:rj (record-round job 50000) :sf (submit-round fl 5000)
                       :pf (publish-round cf ids story 2000) :pfn (publish-round cfn ids story 2000)}))
            m #(median (map % rs))
            rj (m (comp first :rj))
            rjp (m (comp second :rj))]
        (println (str "jobs-bench record_ns_thread flow=" (fmt rj) " job_thread_ns_per_record flow=" (fmt rjp)))
        (println (str "jobs-bench submit_ns flow=" (fmt (m :sf))))
        (println (str "jobs-bench publish_us_thread flow=" (fmt (m :pf)) " without_background_writes flow=" (fmt (m :pfn))))
        (is (pos? rj)))
      (finally
        (perf/close-recorder! job 10000) (fanout/close! fl 10000)
        (doseq [c [cf cfn]] (fanout/close! (:fanout c) 30000) (store/close-store! (:store c)))
        (run! u/delete-tree! dirs)))))

(defn- throughput-round
  "Posts/s that 4 threads publish for `secs` and the background work finishes (fan-out and indexing done)."
  [secs story]
  (let [dir (u/temp-dir "bench-tput")
        [ctx ids] (publish-setup dir false)
        n (java.util.concurrent.atomic.AtomicLong.)
        t0 (System/nanoTime)
        stop (+ (System/currentTimeMillis) (* 1000 (long secs)))
        ws (doall (for [t (range 4)]
                    (future (loop [i t]
                              (when (< (System/currentTimeMillis) stop)
                                (svc/publish! ctx (nth ids (mod i (count ids))) {:subject (str "subject words " i) :story story :occurred "2026-11-22"})
                                (.incrementAndGet n)
                                (recur (+ i 4)))))))]
    (try (run! deref ws)
         (fanout/await-idle (:fanout ctx) 120000)
         (/ (.get n) (/ (- (System/nanoTime) t0) 1e9))
         (finally (fanout/close! (:fanout ctx) 30000) (store/close-store! (:store ctx)) (u/delete-tree! dir)))))

(deftest ^:benchmark background-throughput
  (let [story (str/join " " (repeat 150 "lorem"))]
    (throughput-round 3 story)
    (let [rs (vec (for [_ (range 3)] (throughput-round 10 story)))]
      (println (str "jobs-bench done_posts_per_s flow=" (str/join "," (map fmt rs))))
      (is (every? pos? rs)))))
