(ns herald.flow.crash-child
  "The job the crash/resume test runs in a child JVM: a durable log in, every segment to a file, exact per-window sums to another."
  (:require [herald.flow :as flow]
            [herald.flow.test-fns :as fns])
  (:import (java.io FileOutputStream)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(def ^:private windows-out (atom nil))

(defn- append-lines! [^FileOutputStream o lines]
  (locking o
    (.write o (.getBytes ^String (apply str (map #(str % "\n") lines)) StandardCharsets/UTF_8))))

(defn window-closed!
  "Trigger sync: one line per fired extent."
  [{:keys [window/id group lower value]}]
  (append-lines! @windows-out [(pr-str [id group lower value])]))

(defn job
  "in (log) -> slow -> out (file of ids) and -> agg (count and sum per group per second of event time)."
  [log-dir]
  {:job/name :crash
   :workflow [[:in :slow] [:slow :out] [:slow :agg]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/log-input :log/dir log-dir :task/batch-size 16}
             {:task/name :slow :task/type :function :task/fn :herald.flow.test-fns/slow}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/fn-output}
             {:task/name :agg :task/type :reduce :task/group-by-key :g :task/parallelism 2}]
   :windows [{:window/id :count :window/task :agg :window/type :fixed :window/range 1000 :window/time-key :at
              :window/aggregation :herald.flow/count}
             {:window/id :sum :window/task :agg :window/type :fixed :window/range 1000 :window/time-key :at
              :window/aggregation [:herald.flow/sum :v]}]
   :triggers [{:trigger/window-id :count :trigger/on :watermark :trigger/sync :herald.flow.crash-child/window-closed!}
              {:trigger/window-id :sum :trigger/on :watermark :trigger/sync :herald.flow.crash-child/window-closed!}]})

(defn -main
  "Args: log-dir data-dir ids-file windows-file slow-micros. Runs until killed."
  [log-dir data-dir ids-file windows-file slow-micros]
  (.set fns/slow-nanos (* 1000 (parse-long slow-micros)))
  (let [ids (FileOutputStream. ^String ids-file true)]
    (reset! windows-out (FileOutputStream. ^String windows-file true))
    (let [h (flow/submit-job (job log-dir)
                             {:data-dir data-dir :checkpoint-interval-ms 100
                              :inject {:out {:sink/fn (fn [segs] (append-lines! ids (map :id segs)))}}})]
      (println "restored-epoch" (pr-str (:restored-epoch h)))
      (flush)
      (println "ended" (pr-str (:status (flow/await-job h)))))))
