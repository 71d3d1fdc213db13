(ns herald.flow.kafka-crash-child
  "The job the Kafka Streams crash test runs in a child JVM (and again in the test's own JVM): a topic in, every segment's id to a file through a plugin output, exact per-second counts and sums to a topic."
  (:require [herald.flow :as flow]
            [herald.flow.test-fns :as fns])
  (:import (java.io FileOutputStream)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn row
  "Trigger emit: one row per closed extent."
  [{:keys [window/id group lower value]}]
  {:window id :group group :lower lower :value value})

(def job
  "in -> slow -> ids (plugin output: a file of ids) and -> agg (count and sum per :g per second) -> rows (topic)."
  {:job/name :kafka-crash
   :workflow [[:in :slow] [:slow :ids] [:slow :agg] [:agg :rows]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :slow :task/type :function :task/fn :herald.flow.test-fns/slow}
             {:task/name :ids :task/type :output :task/plugin :herald.flow.plugin/fn-output :task/batch-size 20}
             {:task/name :agg :task/type :reduce :task/group-by-key :g :task/parallelism 2}
             {:task/name :rows :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
   :windows [{:window/id :count :window/task :agg :window/type :fixed :window/range 1000 :window/time-key :at
              :window/aggregation :herald.flow/count}
             {:window/id :sum :window/task :agg :window/type :fixed :window/range 1000 :window/time-key :at
              :window/aggregation [:herald.flow/sum :v]}]
   :triggers [{:trigger/window-id :count :trigger/on :watermark :trigger/emit :herald.flow.kafka-crash-child/row}
              {:trigger/window-id :sum :trigger/on :watermark :trigger/emit :herald.flow.kafka-crash-child/row}]})

(defn submit
  "Submits the job as application `app` reading `in-topic`, rows to `rows-topic`, ids appended to `ids-file`."
  [bootstrap app in-topic rows-topic ids-file data-dir]
  (let [out (FileOutputStream. ^String ids-file true)]
    (flow/submit-job job {:runtime :kafka-streams :data-dir data-dir :checkpoint-interval-ms 200 :on-error (fn [_])
                          :inject {:in {:kafka/topic in-topic} :rows {:kafka/topic rows-topic}
                                   :ids {:sink/fn (fn [segs]
                                                    (let [^String s (apply str (map #(str (:id %) "\n") segs))]
                                                      (locking out (.write out (.getBytes s StandardCharsets/UTF_8)))))}}
                          :kafka {:bootstrap-servers bootstrap :application-id app
                                  :config {"session.timeout.ms" 6000 "heartbeat.interval.ms" 1000}}})))

(defn -main
  "Args: bootstrap app in-topic rows-topic ids-file data-dir slow-micros. Runs until killed."
  [bootstrap app in-topic rows-topic ids-file data-dir slow-micros]
  (.set fns/slow-nanos (* 1000 (parse-long slow-micros)))
  (let [h (submit bootstrap app in-topic rows-topic ids-file data-dir)]
    (println "started")
    (flush)
    (println "ended" (pr-str (:status (flow/await-job h))))))
