(ns herald.feed.fanout-test
  "Tests of the in-process fan-out executor: every job runs, failures retry, backpressure, drain on close."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.fanout :as fanout]))

(set! *warn-on-reflection* true)

(deftest every-job-runs-and-idle-is-observable
  (let [seen (atom #{})
        f (fanout/executor-fanout #(do (Thread/sleep 1) (swap! seen conj (:id %))) {:threads 2 :queue-size 5})]
    (dotimes [i 200] (fanout/submit! f {:id i}))
    (is (true? (fanout/await-idle f 10000)))
    (is (= (set (range 200)) @seen) "jobs beyond the queue ran on the caller: none lost")
    (is (= {:submitted 200 :completed 200 :failed 0 :pending 0 :queued 0} (fanout/stats f)))
    (is (true? (fanout/close! f 1000)))
    (is (thrown? clojure.lang.ExceptionInfo (fanout/submit! f {:id -1})))))

(deftest failures-are-retried-then-reported
  (let [attempts (atom {})
        errors (atom [])
        f (fanout/executor-fanout (fn [{:keys [id]}]
                                    (let [n (get (swap! attempts update id (fnil inc 0)) id)]
                                      (when (or (= id :never) (< n 3)) (throw (RuntimeException. "store busy")))))
                                  {:threads 1 :retries 2 :on-error (fn [t job] (swap! errors conj [(ex-message t) job]))})]
    (fanout/submit! f {:id :flaky})
    (fanout/submit! f {:id :never})
    (is (fanout/await-idle f 10000))
    (is (= {:flaky 3 :never 3} @attempts))
    (is (= [["store busy" {:id :never}]] @errors))
    (is (= 1 (:failed (fanout/stats f))))
    (fanout/close! f 1000)))

(deftest close-drains-queued-jobs
  (let [done (atom 0)
        f (fanout/executor-fanout (fn [_] (Thread/sleep 5) (swap! done inc)) {:threads 1 :queue-size 100})]
    (dotimes [_ 50] (fanout/submit! f {}))
    (is (true? (fanout/close! f 10000)))
    (is (= 50 @done))))

(deftest options-are-validated
  (is (= :threads (:key (ex-data (try (fanout/executor-fanout identity {:threads 0}) (catch Exception e e))))))
  (is (= :queue-size (:key (ex-data (try (fanout/executor-fanout identity {:queue-size "x"}) (catch Exception e e)))))))
