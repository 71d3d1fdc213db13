(ns herald.flow.kafka-rebalance-test
  "Two instances of one Kafka Streams job (one application id) share its partitions; when one is killed mid-stream the other takes them over, and every segment reaches the plugin output."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-output-test :as kot]
            [herald.flow.kafka-support :as ks]))

(set! *warn-on-reflection* true)

(defn- ids [a] (set (map :id @a)))

(defn- wait-until [pred ^long ms]
  (let [deadline (+ (System/currentTimeMillis) ms)]
    (loop [] (cond (pred) true (> (System/currentTimeMillis) deadline) false :else (do (Thread/sleep 50) (recur))))))

(defn- processed [h] (long (or (get-in (flow/job-metrics h) [:tasks :tag :segments-in]) 0)))

(defn- active-tasks
  "The stream tasks instance `h` runs now."
  [h]
  (reduce + (for [^org.apache.kafka.streams.ThreadMetadata t (.metadataForLocalThreads ^org.apache.kafka.streams.KafkaStreams (:streams h))]
              (count (.activeTasks t)))))

(deftest ^:integration two-instances-share-the-partitions-and-survive-a-kill
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")} durable (atom [])
          submit #(flow/submit-job kot/job (-> (ks/kafka-opts bootstrap app topics {:processing-guarantee :at-least-once :threads 1
                                                                                     :config {"session.timeout.ms" 6000}})
                                               (assoc :checkpoint-interval-ms 200)
                                               (assoc-in [:inject :out] {:sink/durable durable :task/batch-size 20})))
          produce! (fn [from to] (kb/produce! bootstrap (:in topics) (for [i (range from to)] {:id i})))
          n 6000]
      (kb/create-topics! bootstrap (vals topics) 4)
      (reset! kot/crash-after nil)
      (let [a (submit) b (submit)]
        (try
          (testing "both instances get partitions"
            (is (wait-until #(and (pos? (active-tasks a)) (pos? (active-tasks b)) (= 4 (+ (active-tasks a) (active-tasks b)))) 90000)
                (str "active tasks: a " (active-tasks a) ", b " (active-tasks b)))
            (doseq [k (range 0 3000 100)] (produce! k (+ k 100)) (Thread/sleep 20))
            (is (wait-until #(and (pos? (processed a)) (pos? (processed b))) 60000)
                (str "processed: a " (processed a) ", b " (processed b))))
          (testing "one is killed mid-stream; the other takes its partitions over"
            (is (= :killed (:status (flow/kill-job a))))
            (produce! 3000 n)
            (is (true? (flow/await-caught-up b 90000)))
            (is (= (set (range n)) (ids durable)) "every segment written, none lost across the rebalance")
            (is (< (- (count @durable) n) n) "duplicates only from the segments replayed after the handover"))
          (finally (flow/kill-job a) (flow/kill-job b)))))))
