(ns herald.flow.runtime-test
  "The in-process runtime against a naive sequential interpreter, plus routing, errors, lifecycles and metrics."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.properties :as prop]
            [herald.flow :as flow]
            [herald.flow.gen :as g]
            [herald.flow.plugin :as plugin]
            [herald.flow.test-fns :as fns])
  (:import (java.util.concurrent ArrayBlockingQueue)))

(set! *warn-on-reflection* true)

(defn run-job
  "Runs `job` with each input fed `segments` and each output collected; returns outputs, errors, fired."
  [job segments opts]
  (reset! fns/fired [])
  (let [outs (into {} (for [t (:catalog job) :when (= :output (:task/type t))] [(:task/name t) (atom [])]))
        ins (for [t (:catalog job) :when (= :input (:task/type t))] (:task/name t))
        errors (atom [])
        h (flow/submit-job job (merge {:inject (merge (into {} (for [i ins] [i {:seq/segments segments}]))
                                                      (into {} (for [[o a] outs] [o {:sink/atom a}])))
                                       :on-error #(swap! errors conj %)}
                                      opts))
        st (flow/await-job h 20000)]
    {:status (:status st)
     :outputs (into {} (for [[o a] outs :when (seq @a)] [o @a]))
     :errors (reduce + (map :errors (vals (:tasks (flow/job-metrics h)))))
     :sums (into {} (map (juxt :group :value)) @fns/fired)}))

(defspec runtime-matches-interpreter 100
  (prop/for-all [shape g/gen-shape fuse? (clojure.test.check.generators/elements [true false])
                 cap (clojure.test.check.generators/elements [1 4 32])]
    (let [job (g/job-of shape)
          segs (:segments shape)
          ins (for [t (:catalog job) :when (= :input (:task/type t))] (:task/name t))
          want (g/interpret job (into {} (for [i ins] [i segs])))
          got (run-job job segs {:fuse? fuse? :queue-capacity cap})]
      (and (= :completed (:status got))
           (= (update-vals (:outputs want) g/multiset) (update-vals (:outputs got) g/multiset))
           (= (:errors want) (:errors got))
           (= (:sums want) (:sums got))))))

(defspec ^:stress runtime-matches-interpreter-at-length 1000
  (prop/for-all [shape g/gen-shape fuse? (clojure.test.check.generators/elements [true false])
                 cap (clojure.test.check.generators/elements [1 2 32])]
    (let [job (g/job-of shape)
          ins (for [t (:catalog job) :when (= :input (:task/type t))] (:task/name t))
          want (g/interpret job (into {} (for [i ins] [i (:segments shape)])))
          got (run-job job (:segments shape) {:fuse? fuse? :queue-capacity cap})]
      (and (= :completed (:status got))
           (= (update-vals (:outputs want) g/multiset) (update-vals (:outputs got) g/multiset))
           (= (:errors want) (:errors got))
           (= (:sums want) (:sums got))))))

(def ^:private base2
  {:workflow [[:in :f] [:f :a]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/boom-7}
             {:task/name :a :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]})

(def ^:private base
  {:workflow [[:in :f] [:f :a] [:f :b]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/boom-7}
             {:task/name :a :task/type :output :task/plugin :herald.flow.plugin/collecting-output}
             {:task/name :b :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]})

(deftest flow-conditions-route-and-short-circuit
  (let [job (assoc base :flow-conditions
                   [{:flow/from :f :flow/to [:a] :flow/predicate :herald.flow.test-fns/big? :flow/short-circuit? true}
                    {:flow/from :f :flow/to :all :flow/predicate [:not :herald.flow.test-fns/even-n?]}])
        r (run-job job (map #(hash-map :n %) [1 2 3 51 52 60]) {})]
    (is (= #{51 52 60 1 3} (set (map :n (get-in r [:outputs :a])))) "big ones short-circuit to :a; odd go everywhere")
    (is (= #{1 3} (set (map :n (get-in r [:outputs :b])))) "even small ones match nothing and are dropped")))

(deftest exceptions-are-data
  (testing "a thrown-exception condition routes the failed segment, post-transformed"
    (let [job (assoc base :flow-conditions
                     [{:flow/from :f :flow/to [:b] :flow/predicate :herald.flow.test-fns/seven?
                       :flow/thrown-exception? true :flow/post-transform :herald.flow.test-fns/err->seg}])
          r (run-job job (map #(hash-map :n %) (range 1 16)) {})]
      (is (= :completed (:status r)) "the job keeps running")
      (is (= [{:failed 7 :msg "seven"} {:failed 14 :msg "seven"}] (filter :failed (get-in r [:outputs :b]))))
      (is (= 13 (count (get-in r [:outputs :a]))))
      (is (= 2 (:errors r)))))
  (testing "without a condition the error callback gets the task, the segment and the exception"
    (let [errors (atom [])
          out (atom [])
          h (flow/submit-job base
                             {:inject {:in {:seq/segments [{:n 7} {:n 8}]} :a {:sink/atom out} :b {:sink/atom (atom [])}}
                              :on-error #(swap! errors conj %)})
          _ (flow/await-job h 5000)]
      (is (= [{:n 8}] @out))
      (is (= [:f {:n 7} "seven"] (let [{:keys [task segment ^Throwable exception]} (first @errors)]
                                   [task segment (.getMessage exception)])))))
  (testing "a fn returning something that is not a segment is an error, not a crash"
    (let [errors (atom [])
          h (flow/submit-job (assoc-in base [:catalog 1 :task/fn] :herald.flow.test-fns/not-a-result)
                             {:inject {:in {:seq/segments [{:n 1}]} :a {:sink/atom (atom [])} :b {:sink/atom (atom [])}}
                              :on-error #(swap! errors conj %)})]
      (is (= :completed (:status (flow/await-job h 5000))))
      (is (= :herald.flow/bad-result (:type (ex-data (:exception (first @errors)))))))))

(deftest params-parallelism-and-grouping
  (let [job {:workflow [[:in :add] [:add :out]]
             :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :task/batch-size 3}
                       {:task/name :add :task/type :function :task/fn :herald.flow.test-fns/add :task/params [100]
                        :task/parallelism 3 :task/group-by-key :k}
                       {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]}
        segs (for [i (range 300)] {:n i :k (mod i 7)})
        r (run-job job segs {})]
    (is (= (frequencies (map #(update % :n + 100) segs)) (frequencies (get-in r [:outputs :out]))))
    (testing "a grouped task keeps each group's order (one thread per group)"
      (is (every? #(apply < (map :n %)) (vals (group-by :k (get-in r [:outputs :out]))))))))

(deftest queue-input-and-metrics
  (let [q (ArrayBlockingQueue. 4)
        out (atom [])
        h (flow/submit-job {:job/name :q
                            :workflow [[:in :inc] [:inc :out]]
                            :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/queue-input}
                                      {:task/name :inc :task/type :function :task/fn :herald.flow.test-fns/inc-n}
                                      {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]}
                           {:inject {:in {:queue/queue q} :out {:sink/atom out}}})]
    (is (= 0 (get-in (flow/job-metrics h) [:tasks :in :lag])))
    (doseq [i (range 100)] (.put q {:n i}))
    (.put q plugin/end-of-input)
    (is (= :completed (:status (flow/await-job h 5000))))
    (is (= (range 1 101) (map :n @out)) "one thread end to end keeps order")
    (let [m (flow/job-metrics h)]
      (is (= :q (:job/name m)))
      (is (pos? (:started-at m)))
      (is (= 100 (get-in m [:tasks :inc :segments-in])))
      (is (= [:in :inc :out] (get-in m [:tasks :inc :stage])) "the straight chain is fused")
      (is (pos? (get-in m [:tasks :inc :batch-latency-us :max])))
      (testing "job-counters: the counters of job-metrics, without the histograms"
        (let [c (flow/job-counters h)]
          (is (= #{:in :inc :out} (set (keys c))))
          (is (= {:segments-in 100 :segments-out 100 :errors 0 :late 0} (dissoc (:inc c) :batches)))
          (is (= (update-vals (:tasks m) #(select-keys % [:segments-in :segments-out :batches :errors :late])) c)))))))

(deftest lifecycles-are-called
  (reset! fns/hook-log [])
  (let [job (assoc base2 :lifecycles [{:lifecycle/task :f :lifecycle/calls :herald.flow.test-fns/counting-calls}])
        h (flow/submit-job job {:inject {:in {:seq/segments [{:n 1} {:n 2}]} :a {:sink/atom (atom [])}}})]
    (flow/await-job h 5000)
    (let [log @fns/hook-log]
      (is (= [:start [:in :f :a]] (first log)))
      (is (some #(= [:before 2 true] %) log) "before-batch sees the batch and what before-task-start returned")
      (is (some #{[:after]} log))
      (is (= [:stop [:in :f :a]] (last log))))))

(deftest kill-job-stops-a-running-job
  (let [q (ArrayBlockingQueue. 4)
        h (flow/submit-job (assoc-in base2 [:catalog 0 :task/plugin] :herald.flow.plugin/queue-input)
                           {:inject {:in {:queue/queue q} :a {:sink/atom (atom [])}}})]
    (is (nil? (flow/await-job h 100)) "still running")
    (is (= :killed (:status (flow/kill-job h))))
    (is (every? #(not (.isAlive ^Thread %)) (:threads h)))))

(deftest plugin-failure-fails-the-job
  (let [h (flow/submit-job base2
                           {:inject {:in {:seq/segments [{:n 1}]}
                                     :a {:task/plugin :herald.flow.plugin/fn-output
                                         :sink/fn (fn [_] (throw (ex-info "disk full" {})))}}})
        st (flow/await-job h 5000)]
    (is (= :failed (:status st)))
    (is (= "disk full" (.getMessage ^Throwable (:error st))))))

(deftest input-flow-conditions-and-windowed-function-tasks
  (testing "an input's own flow conditions route its segments"
    (let [job {:workflow [[:in :a] [:in :b]]
               :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                         {:task/name :a :task/type :output :task/plugin :herald.flow.plugin/collecting-output}
                         {:task/name :b :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
               :flow-conditions [{:flow/from :in :flow/to [:a] :flow/predicate :herald.flow.test-fns/even-n?}
                                 {:flow/from :in :flow/to [:b] :flow/predicate [:not :herald.flow.test-fns/even-n?]}]}
          r (run-job job (map #(hash-map :n %) (range 10)) {})]
      (is (= [0 2 4 6 8] (map :n (get-in r [:outputs :a]))))
      (is (= [1 3 5 7 9] (map :n (get-in r [:outputs :b]))))))
  (testing "a windowed :function task passes its segments on and emits fired extents too"
    (let [job {:workflow [[:in :f] [:f :out]]
               :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                         {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n}
                         {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
               :windows [{:window/id :w :window/task :f :window/type :global :window/aggregation [:herald.flow/sum :n]}]
               :triggers [{:trigger/window-id :w :trigger/on :watermark :trigger/emit :herald.flow.test-fns/collect-value}]}
          r (run-job job (map #(hash-map :n %) (range 4)) {})]
      (is (= [{:n 1} {:n 2} {:n 3} {:n 4} {:event :job-completed :value 10 :lower Long/MIN_VALUE :group nil}]
             (get-in r [:outputs :out]))))))

(deftest describe-the-model
  (is (= [:job :task :flow-condition :lifecycle :lifecycle-calls :window :trigger :aggregation :fired] (flow/describe)))
  (is (= 64 (:default (flow/describe :task :task/batch-size))))
  (is (contains? (flow/describe :window) :window/allowed-lateness)))

(deftest hook-failures-fail-the-job-after-handle-exception
  (reset! fns/hook-log [])
  (let [h (flow/submit-job (assoc base2 :lifecycles [{:lifecycle/task :f :lifecycle/calls :herald.flow.test-fns/failing-calls}])
                           {:inject {:in {:seq/segments [{:n 1}]} :a {:sink/atom (atom [])}}})
        st (flow/await-job h 5000)]
    (is (= :failed (:status st)))
    (is (= "hook broke" (.getMessage ^Throwable (:error st))))
    (is (= [[:handled :task "hook broke"]] @fns/hook-log))))

(deftest plan-shows-fusion
  (let [job {:workflow [[:in :a] [:a :b] [:b :out] [:b :side]]
             :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                       {:task/name :a :task/type :function :task/fn :herald.flow.test-fns/inc-n}
                       {:task/name :b :task/type :function :task/fn :herald.flow.test-fns/inc-n :task/parallelism 2}
                       {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output :task/parallelism 2}
                       {:task/name :side :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]}]
    (is (= [[:in :a] [:b] [:out] [:side]] (map :tasks (flow/plan job))) ":b fans out, so it ends its stage")
    (is (= [[:in] [:a] [:b] [:out] [:side]] (map :tasks (flow/plan job {:fuse? false}))))))

(def ^:private plugin-opens (atom {:open 0 :closed 0}))

(defn counting-input
  "A `seq-input` that counts its constructions and closes in `plugin-opens` (a stand-in for a log reader
  holding a file)."
  [task]
  (swap! plugin-opens update :open inc)
  (let [in (plugin/seq-input task)]
    (reify herald.flow.spi/Input
      (-poll! [_ n t] (herald.flow.spi/-poll! in n t))
      (-position [_] (herald.flow.spi/-position in))
      (-seek! [_ p] (herald.flow.spi/-seek! in p))
      (-close-input! [_] (swap! plugin-opens update :closed inc) (herald.flow.spi/-close-input! in)))))

(defn counting-output
  "A `collecting-output` that counts its constructions and closes in `plugin-opens`."
  [task]
  (swap! plugin-opens update :open inc)
  (let [out (plugin/collecting-output task)]
    (reify herald.flow.spi/Output
      (-write! [_ s] (herald.flow.spi/-write! out s))
      (-flush! [_] (herald.flow.spi/-flush! out))
      (-close-output! [_] (swap! plugin-opens update :closed inc) (herald.flow.spi/-close-output! out)))))

(deftest a-failing-constructor-closes-the-plugins-already-built
  (doseq [[what job] {"one stage: the input is built, then its output's constructor throws"
                      {:workflow [[:in :f] [:f :b]]
                       :catalog [{:task/name :in :task/type :input :task/plugin ::counting-input}
                                 {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n}
                                 {:task/name :b :task/type :output :task/plugin :herald.flow.plugin/fn-output}]}
                      "two stages: the first is built whole, the second's output throws"
                      {:workflow [[:in :f] [:f :a] [:f :b]]
                       :catalog [{:task/name :in :task/type :input :task/plugin ::counting-input}
                                 {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n}
                                 {:task/name :a :task/type :output :task/plugin ::counting-output}
                                 {:task/name :b :task/type :output :task/plugin :herald.flow.plugin/fn-output}]}}]
    (testing what
      (reset! plugin-opens {:open 0 :closed 0})
      (let [e (try (flow/submit-job job {:inject (cond-> {:in {:seq/segments [{:n 1}]}}
                                                   (some #(= :a (:task/name %)) (:catalog job)) (assoc :a {:sink/atom (atom [])}))})
                   nil
                   (catch clojure.lang.ExceptionInfo e e))]
        (is (some? e) "the job is refused: :b has no :sink/fn")
        (is (= :sink/fn (:key (ex-data e))))
        (is (pos? (long (:open @plugin-opens))))
        (is (= (:open @plugin-opens) (:closed @plugin-opens)) "every plugin built was closed")))))

(deftest idle-threads-park-until-work-comes
  (testing "a job with no windows and no data-dir: its queue workers wait on their queues with no timeout"
    (let [q (ArrayBlockingQueue. 4)
          out (atom [])
          h (flow/submit-job {:workflow [[:in :f] [:f :out]]
                              :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/queue-input}
                                        {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n :task/parallelism 2}
                                        {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output :task/parallelism 2}]}
                             {:inject {:in {:queue/queue q} :out {:sink/atom out}}})
          queue-threads (remove #(.endsWith (.getName ^Thread %) "-in-0") (:threads h))
          parked? (fn [] (every? #(= Thread$State/WAITING (.getState ^Thread %)) queue-threads))]
      (try
        (is (= 2 (count queue-threads)))
        (is (loop [n 0] (cond (parked?) true (> n 3000) false :else (do (Thread/sleep 10) (recur (inc n)))))
            "parked (WAITING), not polling every few milliseconds (TIMED_WAITING)")
        (.put q {:n 1})
        (is (loop [n 0] (cond (seq @out) true (> n 3000) false :else (do (Thread/sleep 10) (recur (inc n)))))
            "a segment still wakes them")
        (is (= [{:n 2}] @out))
        (finally (is (= :killed (:status (flow/kill-job h)))))))))
