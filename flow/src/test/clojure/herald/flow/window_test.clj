(ns herald.flow.window-test
  "Windows and triggers: event time, watermarks, late data, every window type and built-in aggregation."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.plugin :as plugin]
            [herald.flow.test-fns :as fns]))

(set! *warn-on-reflection* true)

(defn- job [window trigger & {:keys [parallelism group] :or {parallelism 1}}]
  {:workflow [[:in :agg] [:agg :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :task/batch-size 4}
             (cond-> {:task/name :agg :task/type :reduce :task/parallelism parallelism}
               group (assoc :task/group-by-key group))
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
   :windows [(merge {:window/id :w :window/task :agg} window)]
   :triggers [(merge {:trigger/window-id :w :trigger/emit :herald.flow.test-fns/fired->seg} trigger)]})

(defn- run [job segs]
  (reset! fns/late [])
  (let [out (atom [])
        h (flow/submit-job job {:inject {:in {:seq/segments segs} :out {:sink/atom out}}})
        st (flow/await-job h 10000)]
    (is (= :completed (:status st)))
    {:out @out :metrics (flow/job-metrics h)}))

(def ^:private minute 60000)

(deftest fixed-windows-close-on-the-watermark-and-drop-late-data
  (let [segs [{:at 1000 :v 1} {:at 59000 :v 2} {:at 61000 :v 3}   ; minute 0: 1 2
              {:at 30000 :v 4}                                    ; minute 0 still open (watermark 61000-5000)
              {:at 126000 :v 5}                                   ; watermark 121000 closes minute 1
              {:at 70000 :v 6}                                    ; late: minute 1 closed
              {:at 130000 :v 7}]
        {:keys [out metrics]} (run (job {:window/type :fixed :window/range [1 :minute] :window/time-key :at
                                 :window/allowed-lateness [5 :seconds] :window/aggregation [:herald.flow/collect]
                                 :window/on-late :herald.flow.test-fns/on-late}
                                {:trigger/on :watermark :trigger/emit :herald.flow.test-fns/fired->seg})
                           segs)
        ;; collect's value is a vector (not a map), so fired->seg keeps only the extent facts
        by-lower (group-by :lower out)]
    (is (= #{0 minute (* 2 minute)} (set (keys by-lower))))
    (is (= [{:at 70000 :v 6}] @fns/late) "the late segment went to :window/on-late")
    (is (= 1 (get-in metrics [:tasks :agg :late])))
    (testing "minute 1 closed on the watermark, minute 2 at job completion"
      (is (= :watermark (:event (first (by-lower minute)))))
      (is (= :job-completed (:event (first (by-lower (* 2 minute)))))))))

(deftest percentiles-per-group-per-minute
  (let [segs (for [i (range 2000)] {:at (* i 60) :entity (if (even? i) :inbound :outbound) :ms (inc (mod i 100))})
        {:keys [out metrics]} (run (job {:window/type :fixed :window/range [1 :minute] :window/time-key :at
                                         :window/aggregation [:herald.flow/percentiles :ms]}
                                        {:trigger/on :watermark}
                                        :parallelism 2 :group :entity)
                                   segs)
        expect (for [[[g lower] xs] (group-by (juxt :entity #(* minute (quot (:at %) minute))) segs)]
                 [g lower (count xs) (apply max (map :ms xs))])]
    (is (= (set expect) (set (map (juxt :group :lower :count :max) out))) "count and max are exact per entity x minute")
    (is (every? #(<= (:p50 %) (:p95 %) (:p99 %) (:max %)) out))
    (is (= 0 (get-in metrics [:tasks :agg :errors])))))

(deftest sliding-windows-count-every-extent
  (let [segs (for [t [0 5 10 15 20 25]] {:at t})
        {:keys [out]} (run (job {:window/type :sliding :window/range 10 :window/slide 5 :window/time-key :at
                                 :window/aggregation :herald.flow/count}
                                {:trigger/on :watermark :trigger/emit :herald.flow.test-fns/collect-value})
                           segs)]
    (is (= {-5 1, 0 2, 5 2, 10 2, 15 2, 20 2, 25 1} (into {} (map (juxt :lower :value)) out)))))

(deftest segment-trigger-discarding-and-accumulating
  (let [segs (for [i (range 10)] {:n i})
        run-with (fn [refinement]
                   (:out (run (job {:window/type :global :window/aggregation [:herald.flow/sum :n]}
                                   {:trigger/on :segment :trigger/threshold 4 :trigger/refinement refinement
                                    :trigger/emit :herald.flow.test-fns/collect-value})
                              segs)))]
    (is (= [[:segment 6] [:segment 22] [:job-completed 17]] (map (juxt :event :value) (run-with :discarding))))
    (is (= [[:segment 6] [:segment 28] [:job-completed 45]] (map (juxt :event :value) (run-with :accumulating))))))

(deftest timer-trigger-fires-on-wall-clock
  (let [q (java.util.concurrent.LinkedBlockingQueue.)
        out (atom [])
        h (flow/submit-job (-> (job {:window/type :global :window/aggregation :herald.flow/count}
                                    {:trigger/on :timer :trigger/period 50 :trigger/emit :herald.flow.test-fns/collect-value})
                               (assoc-in [:catalog 0 :task/plugin] :herald.flow.plugin/queue-input))
                           {:inject {:in {:queue/queue q} :out {:sink/atom out}}})]
    (.put q {:n 1})
    (.put q {:n 2})
    (Thread/sleep 300)
    (is (= [[:timer 2]] (map (juxt :event :value) @out)) "fired once: nothing new since")
    (.put q {:n 3})
    (.put q plugin/end-of-input)
    (flow/await-job h 5000)
    (is (= [2 3] (map :value @out)) "the new segment fired once more, by the timer or at completion")))

(deftest built-in-and-custom-aggregations
  (let [segs (for [n [4 8 15 16 23 42]] {:n n})
        value (fn [agg] (-> (run (job {:window/type :global :window/aggregation agg}
                                      {:trigger/on :watermark :trigger/emit :herald.flow.test-fns/collect-value})
                                 segs)
                            :out first :value))]
    (is (= 6 (value :herald.flow/count)))
    (is (= 108 (value [:herald.flow/sum :n])))
    (is (= 4 (value [:herald.flow/min :n])))
    (is (= 42 (value [:herald.flow/max :n])))
    (is (= 18.0 (value [:herald.flow/average :n])))
    (is (= (vec segs) (value :herald.flow/collect)))
    (is (= (reduce + (map #(* % %) [4 8 15 16 23 42])) (value :herald.flow.test-fns/sum-of-squares)))
    (is (= {:count 6 :min 4 :max 42} (select-keys (value [:herald.flow/percentiles :n]) [:count :min :max])))))

(deftest a-segment-without-event-time-is-an-error-not-a-crash
  (let [{:keys [metrics out]} (run (job {:window/type :fixed :window/range 10 :window/time-key :at
                                         :window/aggregation :herald.flow/count}
                                        {:trigger/on :watermark :trigger/emit :herald.flow.test-fns/collect-value})
                                   [{:at 1} {:no-time true} {:at 2}])]
    (is (= 1 (get-in metrics [:tasks :agg :errors])))
    (is (= [2] (map :value out)))))
