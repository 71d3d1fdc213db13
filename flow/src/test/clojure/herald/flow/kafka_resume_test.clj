(ns herald.flow.kafka-resume-test
  "A Kafka Streams job killed mid-stream and started again (with an empty local state dir) resumes from its committed offsets and changelogged window state: every window aggregate exact, each emitted once."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks]))

(set! *warn-on-reflection* true)

(defn row
  "What the job emits for a closed extent."
  [fired]
  (select-keys fired [:window/id :group :lower :value]))

(def ^:private t0 1763812800000)

(def job
  {:job/name :resume
   :workflow [[:in :agg] [:agg :rows]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :agg :task/type :reduce :task/group-by-key :k :task/parallelism 2}
             {:task/name :rows :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
   :windows [{:window/id :count :window/task :agg :window/type :fixed :window/time-key :at :window/range 1000
              :window/aggregation :herald.flow/count}
             {:window/id :sum :window/task :agg :window/type :fixed :window/time-key :at :window/range 1000
              :window/aggregation [:herald.flow/sum :n]}]
   :triggers [{:trigger/window-id :count :trigger/on :watermark :trigger/emit :herald.flow.kafka-resume-test/row}
              {:trigger/window-id :sum :trigger/on :watermark :trigger/emit :herald.flow.kafka-resume-test/row}]})

(def ^:private segments (vec (for [i (range 600)] {:k (mod i 3) :n (mod i 11) :at (+ t0 (* i 20))})))

(def ^:private expected
  "Every 1-second extent of every group, computed directly from the data."
  (set (for [[[g lower] segs] (group-by (juxt :k #(- (:at %) (mod (- (:at %) t0) 1000))) segments)
             [id v] [[:count (count segs)] [:sum (reduce + (map :n segs))]]]
         {:window/id id :group g :lower lower :value v})))

(deftest ^:integration restart-resumes-from-committed-state-with-exact-windows
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix)
          topics {:in (str app ".in") :rows (str app ".rows")}
          submit #(flow/submit-job job (ks/kafka-opts bootstrap app topics {:store :rocksdb}))
          ;; the first run stops in the middle of the extent [5000, 6000) of every group
          [first-half second-half] (split-at 275 segments)]
      (kb/create-topics! bootstrap (vals topics) 1)
      (kb/produce! bootstrap (:in topics) first-half)
      (with-open [c (kb/consumer bootstrap [(:rows topics)])]
        (let [h (submit)
              early (get (kb/poll-until c #(some (fn [r] (>= (:lower r) (+ t0 4000))) (get % (:rows topics))) 60000)
                         (:rows topics))]
          (is (= :killed (:status (flow/kill-job h))))
          (is (seq early) "the first run emitted closed extents before it was killed")
          (kb/produce! bootstrap (:in topics) (concat second-half (for [k (range 3)] {:k k :n 0 :at (+ t0 3600000)})))
          (testing "a restart cannot regroup the state under another parallelism"
            (let [r (try (flow/submit-job (assoc-in job [:catalog 1 :task/parallelism] 3) (ks/kafka-opts bootstrap app topics {}))
                         (catch clojure.lang.ExceptionInfo e (ex-data e)))]
              (is (= [:herald.flow/unsupported :task/parallelism 3] ((juxt :type :key :value) r)))))
          (let [h2 (submit)
                late (get (kb/poll-until c #(>= (+ (count early) (count (get % (:rows topics)))) (count expected)) 60000 1500)
                          (:rows topics))
                rows (concat early late)]
            (try
              (testing "each extent emitted exactly once across the two runs"
                (is (= (count expected) (count rows)))
                (is (every? #{1} (vals (frequencies rows)))))
              (testing "with the exact aggregates, the extent cut by the restart included"
                (is (= expected (set rows)))
                (is (some #(= (+ t0 5000) (:lower %)) late)))
              (finally (flow/kill-job h2)))))))))
