(ns herald.flow.kafka.output-test
  "The retry state of a plugin output on :kafka-streams when a replaced stream thread's tasks are spread over other threads: each thread continues the run on its own, and a closed batch no longer reports failing. The processors are the real ones; the ProcessorContext is a stub, because which thread a rebalance hands each task to cannot be chosen on a real broker (kafka-errors-test and kafka-output-test cover replacement end to end)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.retry :as retry]
            [herald.flow.impl.route :as route]
            [herald.flow.kafka.output :as output])
  (:import (java.util.concurrent ConcurrentHashMap)
           (org.apache.kafka.streams.processor.api ProcessorContext)))

(set! *warn-on-reflection* true)

;; a 100 ms poll budget: a failing write gives its thread's tasks back after ~100 ms
(def ^:private ctx (reify ProcessorContext (appConfigs [_] {"max.poll.interval.ms" "200"})))

(defn- on-thread
  "Runs `(f)` on a new thread named `n` (a stream thread of its own) and returns what it returned or threw."
  [n f]
  (let [r (promise)]
    (doto (Thread. ^Runnable (fn [] (deliver r (try (f) (catch Throwable e e)))) ^String n) (.start))
    @r))

(deftest a-run-handed-over-to-two-threads-is-continued-by-each-on-its-own
  (let [states (output/retry-states) groups (ConcurrentHashMap.) broken (atom true)
        spec {:task {:task/name :out :task/plugin :herald.flow.plugin/fn-output
                     :sink/fn (fn [_] (when @broken (throw (ex-info "store down" {}))))
                     :output/retries :forever :output/backoff-ms 10 :output/backoff-max-ms 20
                     :output/give-up-after-ms 600000}
              :job {:job/name :j} :store "herald.out.in.output" :retry-states states :resolve (route/resolver)
              :metrics {:out (metrics/task-metrics)} :on-error (fn [_])}
        join! #(#'output/join! groups spec ctx %)
        leave! #(#'output/leave! groups %1 %2)
        add! #(#'output/add! %1 %2 {:id %3})
        failing? #(:failing? (output/failures states :out))]
    (with-redefs [retry/log-line! (fn [_])]
      (testing "thread 1 fails past its poll budget and gives both its tasks back"
        (let [e (on-thread "s-1" (fn [] (let [g (join!  "0_0")] (join! "0_1") (add! g "0_0" 1) ((:write! g)))))]
          (is (= :herald.flow/output-retry-pending (:type (ex-data e))) (pr-str e)))
        (let [g (.get groups (some #(when (= "s-1" (.getName ^Thread %)) %) (keys groups)))]
          (leave! g "0_0") (leave! g "0_1"))
        (is (not (failing?)) "no batch runs now: only a running thread's batch reports failing")
        (is (pos? (:write-failures (output/failures states :out)))))
      (let [g2 (on-thread "s-2" #(join! "0_0")) g3 (on-thread "s-3" #(join! "0_1"))]
        (testing "a good write on the thread that took task 0_0 does not end the run the other thread took over"
          (reset! broken false)
          (add! g2 "0_0" 2)
          ((:write! g2))
          (is (failing?) "thread 3's batch is still in the run of failures it took over")
          (is (pos? (:write-failures (output/failures states :out))) "the totals stay"))
        (testing "once thread 3's batch closes, nothing reports failing"
          (leave! g3 "0_1")
          (is (not (failing?))))
        (leave! g2 "0_0")))))
