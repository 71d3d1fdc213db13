(ns herald.flow.kafka-crash-test
  "A Kafka Streams job SIGKILLed in a child JVM mid-stream, then run again: every input segment reaches the plugin output at least once, and every window aggregate (exactly-once-v2) is emitted once and exact."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-crash-child :as child]
            [herald.flow.kafka-support :as ks]
            [herald.flow.test-fns :as fns])
  (:import (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(def ^:private n 3000)

(defn- records []
  (concat (for [i (range n)] {:id i :g (mod i 3) :at (* i 10) :v i})
          ;; an hour later, one per group: closes every earlier extent
          (for [g (range 3)] {:id (- -1 g) :g g :at 3600000 :v 0})))

(defn- expected-rows []
  (set (for [[[g lower] rs] (group-by (juxt :g #(* 1000 (quot (:at %) 1000))) (take n (records)))
             [w v] [[:count (count rs)] [:sum (reduce + (map :v rs))]]]
         {:window w :group g :lower lower :value v})))

(defn- ids-seen [f] (if (.exists (io/file f)) (set (keep #(parse-long (str/trim %)) (str/split-lines (slurp f)))) #{}))

(defn- wait-until [pred ^long ms]
  (let [deadline (+ (System/currentTimeMillis) ms)]
    (loop [] (cond (pred) true (> (System/currentTimeMillis) deadline) false :else (do (Thread/sleep 100) (recur))))))

(defn- start-child ^Process [args log]
  (let [pb (ProcessBuilder. ^java.util.List
                            (into [(str (System/getProperty "java.home") "/bin/java") "-Xmx512m" "-XX:+UseSerialGC"
                                   "-XX:TieredStopAtLevel=1" "-cp" (System/getProperty "java.class.path")
                                   "clojure.main" "-m" "herald.flow.kafka-crash-child"]
                                  (map str args)))]
    (.redirectErrorStream pb true)
    (.redirectOutput pb (io/file log))
    (.start pb)))

(deftest ^:integration sigkill-mid-stream-then-resume
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix)
          in (str app ".in") rows (str app ".rows")
          dir (ks/temp-dir)
          ids-file (str (io/file dir "ids.txt"))]
      ;; one input partition: the events reach the windows in event-time order (with two, the closing records
      ;; could overtake the other partition's backlog and make it late, which is the job's semantics, not a crash's)
      (kb/create-topics! bootstrap [in] 1)
      (kb/create-topics! bootstrap [rows] 1)
      (kb/produce! bootstrap in (records))
      (let [p (start-child [bootstrap app in rows ids-file (str (io/file dir "child")) 2000] (io/file dir "child.out"))]
        (try
          (is (wait-until #(>= (count (ids-seen ids-file)) 600) 300000) "the child made progress")
          (finally (.destroyForcibly p) (.waitFor p 10 TimeUnit/SECONDS))))
      (let [before (count (ids-seen ids-file))]
        (is (< before (+ n 3)) (str "killed mid-stream (" before " ids written)"))
        (.set fns/slow-nanos 0)
        (let [h (child/submit bootstrap app in rows ids-file (str (io/file dir "again")))]
          (try
            (with-open [c (kb/consumer bootstrap [rows])]
              (let [want (expected-rows)
                    got (get (kb/poll-until c #(>= (count (get % rows)) (count want)) 300000 2000) rows)]
                (is (wait-until #(= (+ n 3) (count (ids-seen ids-file))) 120000)
                    "every input segment reached the plugin output at least once")
                (testing "window aggregates: each extent once (read_committed), exact"
                  (is (= (count want) (count got)))
                  (is (= want (set got))))))
            (finally (flow/kill-job h))))))))
