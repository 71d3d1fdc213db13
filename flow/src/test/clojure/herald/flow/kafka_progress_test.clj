(ns herald.flow.kafka-progress-test
  "Progress on :kafka-streams: await-caught-up (committed offsets reach the end offsets of the call, through repartition topics), lag per task and partition, and an input's own :kafka/start-from."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-output-test]
            [herald.flow.kafka-support :as ks]))

(set! *warn-on-reflection* true)

(def job
  {:job/name :progress
   :workflow [[:in :agg] [:agg :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :agg :task/type :function :task/fn :herald.flow.kafka-output-test/tag
              :task/group-by-key :k :task/parallelism 2}
             {:task/name :out :task/type :output :task/plugin :herald.flow.kafka-output-test/durable-output}]})

(defn- ids [a] (set (map :id @a)))

(defn- submit [bootstrap job app topics durable]
  (flow/submit-job job (-> (ks/kafka-opts bootstrap app topics {:processing-guarantee :at-least-once})
                           (assoc :checkpoint-interval-ms 200)
                           (assoc-in [:inject :out] {:sink/durable durable :task/batch-timeout-ms 600000 :task/batch-size 1000}))))

(deftest ^:integration await-caught-up-follows-committed-offsets-through-repartition-topics
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")} durable (atom [])]
      (kb/create-topics! bootstrap (vals topics) 2)
      (let [h (submit bootstrap job app topics durable)]
        (try
          (doseq [[from to] [[0 1000] [1000 1500] [1500 1501]]]
            (kb/produce! bootstrap (:in topics) (for [i (range from to)] {:id i :k (mod i 5)}))
            (is (true? (flow/await-caught-up h 60000)))
            (is (= (set (range to)) (ids durable))
                "every record produced before the call went through the regrouping and was flushed by the output"))
          (testing "lag per task and partition (this instance reads every partition)"
            (let [m (flow/job-metrics h)]
              (doseq [t [:in :agg]]
                (is (= #{0 1} (set (keys (get-in m [:tasks t :lag-by-partition])))) (pr-str (get-in m [:tasks t])))
                (is (= (get-in m [:tasks t :lag]) (reduce + (vals (get-in m [:tasks t :lag-by-partition]))))))))
          (finally (flow/kill-job h))))
      (testing "a killed job is not caught up"
        (let [h (submit bootstrap job app topics durable)]
          (flow/kill-job h)
          (is (false? (flow/await-caught-up h 2000))))))))

(deftest ^:integration an-input-starts-where-its-task-says
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:new (str app ".new") :all (str app ".all")} durable (atom [])
          two-inputs {:job/name :start-from
                      :workflow [[:new :out] [:all :out]]
                      :catalog [{:task/name :new :task/type :input :task/plugin :herald.flow.plugin/seq-input :kafka/start-from :latest}
                                {:task/name :all :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                                {:task/name :out :task/type :output :task/plugin :herald.flow.kafka-output-test/durable-output}]}]
      (kb/create-topics! bootstrap (vals topics) 1)
      (kb/produce! bootstrap (:new topics) (for [i (range 100)] {:id [:new i]}))
      (kb/produce! bootstrap (:all topics) (for [i (range 100)] {:id [:all i]}))
      (let [h (submit bootstrap two-inputs app topics durable)]
        (try
          (let [deadline (+ (System/currentTimeMillis) 60000)]
            (while (and (not= (set (for [i (range 100)] [:all i])) (ids durable)) (< (System/currentTimeMillis) deadline))
              (Thread/sleep 50)))
          (kb/produce! bootstrap (:new topics) (for [i (range 100 150)] {:id [:new i]}))
          (is (true? (flow/await-caught-up h 60000)))
          (is (= (set (concat (for [i (range 100)] [:all i]) (for [i (range 100 150)] [:new i]))) (ids durable))
              ":latest skipped what its topic held at the start; the other input, by the job-wide default, read it all")
          (finally (flow/kill-job h))))
      (is (= :kafka/start-from (:key (try (flow/validate (assoc-in two-inputs [:catalog 0 :kafka/start-from] :now)) nil
                                          (catch clojure.lang.ExceptionInfo e (ex-data e))))))
      (is (= :kafka/start-from (:key (try (flow/validate (assoc-in two-inputs [:catalog 2 :kafka/start-from] :latest)) nil
                                          (catch clojure.lang.ExceptionInfo e (ex-data e)))))
          "inputs only"))))
