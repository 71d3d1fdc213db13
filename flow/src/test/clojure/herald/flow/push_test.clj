(ns herald.flow.push-test
  "The push input (backpressure, timeouts, close, counts) and await-caught-up in-process: true only once every accepted segment is written and flushed."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.plugin :as plugin]
            [herald.flow.spi :as spi])
  (:import (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(defn- job [& {:keys [capacity parallelism] :or {capacity 10 parallelism 1}}]
  {:job/name :pushed
   :workflow [[:in :inc] [:inc :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/push-input :push/capacity capacity
              :task/batch-size 16 :task/batch-timeout-ms 20}
             {:task/name :inc :task/type :function :task/fn :herald.flow.test-fns/inc-n
              :task/parallelism parallelism :task/group-by-key :k}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/fn-output}]})

(defn- ex-type [f] (try (f) nil (catch clojure.lang.ExceptionInfo e (:type (ex-data e)))))

(deftest push-waits-while-full-and-times-out
  (let [gate (CountDownLatch. 1) got (atom [])
        h (flow/submit-job (job) {:inject {:out {:sink/fn (fn [segs] (.await gate 20 TimeUnit/SECONDS) (swap! got into segs))}}})]
    (try
      (testing "the output blocks: the buffer fills, then a push times out"
        (let [accepted (loop [i 0] (if (and (< i 1000) (flow/push! h :in {:n i :k i} 100)) (recur (inc i)) i))]
          (is (< accepted 1000) "backpressure: not everything fits")
          (is (>= accepted 10) "at least the buffer's capacity was accepted")
          (let [t0 (System/nanoTime)]
            (is (false? (flow/push! h :in {:n -1 :k 0} 50)))
            (is (>= (- (System/nanoTime) t0) 45000000) "waited about the timeout"))
          (is (false? (flow/push! h :in {:n -1 :k 0} 0)) "a zero timeout refuses at once")
          (is (= {:accepted accepted :dropped 3 :queued 10 :capacity 10} (flow/push-stats h :in)))
          (testing "once the output moves, a waiting push gets in"
            (let [f (future (flow/push! h :in {:n accepted :k 0}))]
              (Thread/sleep 50)
              (is (not (realized? f)) "it waits while the buffer is full")
              (.countDown gate)
              (is (true? (deref f 30000 :timeout)))))
          (flow/close-input! h :in)
          (is (= :completed (:status (flow/await-job h 10000))) "closed and drained: the job completes")
          (is (= (range 1 (+ 2 accepted)) (sort (map :n @got))) "every accepted segment, none refused")
          (is (= :herald.flow/job-not-running (ex-type #(flow/push! h :in {:n 0}))))
          (is (= :herald.flow/not-a-push-input (ex-type #(flow/push! h :out {:n 0}))))))
      (finally (.countDown gate) (flow/kill-job h))))
  (testing "a push after close-input! throws while the job still drains"
    (let [gate (CountDownLatch. 1)
          h (flow/submit-job (job) {:inject {:out {:sink/fn (fn [_] (.await gate 20 TimeUnit/SECONDS))}}})]
      (try
        (flow/push! h :in {:n 1 :k 1})
        (flow/close-input! h :in)
        (is (= :herald.flow/input-closed (ex-type #(flow/push! h :in {:n 0}))))
        (is (nil? (flow/await-job h 100)) "the job runs on until its input has drained")
        (.countDown gate)
        (is (= :completed (:status (flow/await-job h 5000))))
        (finally (.countDown gate) (flow/kill-job h))))))

(defn- durable-sink
  "fn-output options whose writes count only once flushed: [opts pending durable]."
  []
  (let [pending (atom []) durable (atom [])]
    [{:sink/fn (fn [segs] (swap! pending into segs))
      :sink/flush-fn (fn [] (let [p @pending] (reset! pending []) (swap! durable into p)))}
     pending durable]))

(deftest await-caught-up-means-written-and-flushed
  (doseq [[what j opts] [["one fused stage" (job :capacity 100) {}]
                         ["grouped over 2 threads" (job :capacity 100 :parallelism 2) {}]
                         ["with snapshots" (job :capacity 100 :parallelism 2) {:data-dir (str (java.nio.file.Files/createTempDirectory "herald-push" (make-array java.nio.file.attribute.FileAttribute 0)))
                                                                                  :checkpoint-interval-ms 50}]]]
    (testing what
      (let [[sink-opts pending durable] (durable-sink)
            h (flow/submit-job j (merge opts {:inject {:out sink-opts}}))]
        (try
          (dotimes [round 3]
            (let [from (* round 1000)]
              (doseq [i (range from (+ from 1000))] (flow/push! h :in {:n i :k (mod i 7)}))
              (is (true? (flow/await-caught-up h 10000)))
              (is (= (set (range (inc from) (+ from 1001))) (set (filter #(> % from) (map :n @durable))))
                  "every segment pushed before the call is written and flushed")))
          (is (= 3000 (count (set (map :n @durable)))))
          (is (true? (flow/await-caught-up h 1000)) "nothing new: caught up at once")
          (finally (flow/kill-job h))))))
  (testing "false on timeout, and for a job that was killed; true for one that completed"
    (let [gate (CountDownLatch. 1)
          h (flow/submit-job (job) {:inject {:out {:sink/fn (fn [_] (.await gate 20 TimeUnit/SECONDS))}}})]
      (flow/push! h :in {:n 1 :k 1})
      (is (false? (flow/await-caught-up h 200)))
      (.countDown gate)
      (is (true? (flow/await-caught-up h 5000)))
      (flow/kill-job h)
      (is (false? (flow/await-caught-up h 1000))))
    (let [h (flow/submit-job (job) {:inject {:out {:sink/fn (fn [_])}}})]
      (flow/push! h :in {:n 1 :k 1})
      (flow/close-input! h :in)
      (flow/await-job h 5000)
      (is (true? (flow/await-caught-up h 1000))))))

(deftest await-caught-up-over-a-log
  (let [dir (str (java.nio.file.Files/createTempDirectory "herald-log" (make-array java.nio.file.attribute.FileAttribute 0)))
        log (flow/open-log dir)
        [sink-opts _ durable] (durable-sink)
        h (flow/submit-job (assoc-in (job) [:catalog 0] {:task/name :in :task/type :input :task/plugin :herald.flow.plugin/log-input
                                                         :log/dir dir :task/batch-timeout-ms 5})
                           {:inject {:out sink-opts}})]
    (try
      (flow/append-all! log (for [i (range 500)] {:n i :k 0}))
      (is (true? (flow/await-caught-up h 10000)))
      (is (= (range 1 501) (map :n @durable)) "the log's records up to its end at the call, flushed, in order")
      (finally (flow/kill-job h) (flow/close-log! log)))))

(deftest offer-never-waits-on-a-push-input-its-owner-polls
  (let [in (plugin/push-input {:task/name :requests :push/capacity 3 :push/min-wait-ms 1})]
    (is (= [true true true false] (mapv #(flow/offer! in {:n %}) (range 4))) "full: refused at once")
    (is (= {:accepted 3 :dropped 1 :queued 3 :capacity 3} (flow/push-stats in)))
    (is (= [{:n 0} {:n 1}] (spi/-poll! in 2 0)))
    (is (= [{:n 2}] (spi/-poll! in 10 0)))
    (is (= [] (spi/-poll! in 10 1)) "empty: waits its timeout, then an empty batch")
    (flow/offer! in {:n 4})
    (flow/close-input! in)
    (is (false? (flow/offer! in {:n 5})) "closed: refused")
    (is (= [{:n 4}] (spi/-poll! in 10 0)) "what was in before the close still comes out")
    (is (nil? (spi/-poll! in 10 0)) "then the input ends")
    (is (= :herald.flow/not-a-push-input (ex-type #(flow/offer! {} {:n 0}))))))
