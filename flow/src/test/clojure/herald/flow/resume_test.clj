(ns herald.flow.resume-test
  "Snapshots and resume in one JVM: kill with and without a last snapshot, a completed job resubmitted, the data-dir lock, lag."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.log-test :refer [temp-dir]]
            [herald.flow.test-fns :as fns]))

(set! *warn-on-reflection* true)

(defn- job [log-dir]
  {:workflow [[:in :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/log-input :log/dir log-dir :task/batch-size 8}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/fn-output}]})

(defn- wait-for [pred]
  (let [deadline (+ (System/currentTimeMillis) 60000)]
    (while (and (not (pred)) (< (System/currentTimeMillis) deadline)) (Thread/sleep 5))
    (pred)))

(defn- start [log-dir data-dir sink]
  (flow/submit-job (job log-dir) {:data-dir data-dir :checkpoint-interval-ms 50
                                  :inject {:out {:sink/fn #(swap! sink into (map :id %))}}}))

(deftest kill-with-a-last-snapshot-replays-nothing
  (let [root (temp-dir "herald-resume")
        log-dir (str root "/log") data-dir (str root "/data")
        l (flow/open-log log-dir)
        seen (atom [])]
    (flow/append-all! l (for [i (range 100)] {:id i}))
    (let [h (start log-dir data-dir seen)]
      (is (wait-for #(= 100 (count @seen))))
      (testing "lag: the log input reports how far it is behind"
        (is (wait-for #(= 0 (get-in (flow/job-metrics h) [:tasks :in :lag])))))
      (testing "a second job on the same data directory is refused"
        (let [e (try (start log-dir data-dir (atom [])) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
          (is (= :herald.flow/data-dir-in-use (:type e)))))
      (is (= :killed (:status (flow/kill-job h {:snapshot? true})))))
    (flow/append-all! l (for [i (range 100 150)] {:id i}))
    (let [h (start log-dir data-dir seen)]
      (is (pos? (:restored-epoch h)))
      (is (wait-for #(= 150 (count @seen))))
      (Thread/sleep 100)
      (is (= (range 150) @seen) "every record once, in order: nothing replayed")
      (flow/kill-job h))
    (flow/close-log! l)))

(deftest kill-without-snapshot-replays-from-the-last-one
  (let [root (temp-dir "herald-resume")
        log-dir (str root "/log") data-dir (str root "/data")
        l (flow/open-log log-dir)
        seen (atom [])]
    (flow/append-all! l (for [i (range 50)] {:id i}))
    (let [h (start log-dir data-dir seen)]
      (is (wait-for #(= 50 (count @seen))))
      (is (wait-for #(pos? (get-in (flow/job-metrics h) [:last-snapshot :epoch] 0))))
      (flow/kill-job h))
    (flow/append-all! l (for [i (range 50 80)] {:id i}))
    (let [h (start log-dir data-dir seen)]
      (is (wait-for #(= (set (range 80)) (set @seen))) "at least once")
      (flow/kill-job h))
    (flow/close-log! l)))

(deftest a-completed-job-resubmitted-does-not-replay
  (let [data-dir (str (temp-dir "herald-resume"))
        j {:workflow [[:in :out]]
           :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                     {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]}
        run (fn [] (let [out (atom [])
                         h (flow/submit-job j {:data-dir data-dir :inject {:in {:seq/segments (map #(hash-map :n %) (range 10))}
                                                                          :out {:sink/atom out}}})]
                     [(:status (flow/await-job h 5000)) @out]))]
    (is (= [:completed (map #(hash-map :n %) (range 10))] (run)))
    (is (= [:completed []] (run)) "the final snapshot holds the input's end")))

(defn- windowed-job [log-dir parallelism]
  {:workflow [[:in :agg]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/log-input :log/dir log-dir}
             {:task/name :agg :task/type :reduce :task/group-by-key :g :task/parallelism parallelism}]
   :windows [{:window/id :sum :window/task :agg :window/type :fixed :window/range 100 :window/time-key :at
              :window/aggregation [:herald.flow/sum :v]}]
   :triggers [{:trigger/window-id :sum :trigger/on :watermark :trigger/sync :herald.flow.test-fns/collect-fired!}]})

(deftest window-state-is-regrouped-when-the-parallelism-changes
  (reset! fns/fired [])
  (let [root (temp-dir "herald-regroup")
        log-dir (str root "/log") data-dir (str root "/data")
        l (flow/open-log log-dir)
        recs (for [i (range 600)] {:g (mod i 5) :at i :v i})
        want (into {} (for [[[g lo] rs] (group-by (juxt :g #(* 100 (quot (:at %) 100))) recs)] [[g lo] (reduce + (map :v rs))]))]
    (flow/append-all! l (take 250 recs))
    (let [h (flow/submit-job (windowed-job log-dir 2) {:data-dir data-dir})]
      (is (wait-for #(= 250 (get-in (flow/job-metrics h) [:tasks :agg :segments-in]))))
      (flow/kill-job h {:snapshot? true}))
    (flow/append-all! l (concat (drop 250 recs) (for [g (range 5)] {:g g :at 100000 :v 0})))
    (let [h (flow/submit-job (windowed-job log-dir 3) {:data-dir data-dir})]
      (is (wait-for #(every? (set (map (juxt :group :lower) @fns/fired)) (keys want))))
      (flow/kill-job h))
    (is (= want (into {} (map (juxt (juxt :group :lower) :value)) @fns/fired))
        "every window exact, open extents carried over from 2 threads to 3")
    (flow/close-log! l)))

(deftest fused-window-state-is-exact-after-a-kill-without-snapshot
  (reset! fns/fired [])
  (let [root (temp-dir "herald-fused")
        log-dir (str root "/log") data-dir (str root "/data")
        l (flow/open-log log-dir)
        recs (for [i (range 3000)] {:g (mod i 3) :at i :v i})
        want (into {} (for [[[g lo] rs] (group-by (juxt :g #(* 100 (quot (:at %) 100))) recs)] [[g lo] (reduce + (map :v rs))]))]
    (is (= [[:in :agg]] (map :tasks (flow/plan (windowed-job log-dir 1)))) "the windowed task runs in the input's loop")
    (let [h (flow/submit-job (windowed-job log-dir 1) {:data-dir data-dir :checkpoint-interval-ms 20})]
      (doseq [batch (partition-all 50 (take 1500 recs))] (flow/append-all! l batch) (Thread/sleep 2))
      (is (wait-for #(pos? (get-in (flow/job-metrics h) [:last-snapshot :epoch] 0))))
      (flow/kill-job h))
    (flow/append-all! l (concat (drop 1500 recs) (for [g (range 3)] {:g g :at 100000 :v 0})))
    (let [h (flow/submit-job (windowed-job log-dir 1) {:data-dir data-dir})]
      (is (wait-for #(every? (set (map (juxt :group :lower) @fns/fired)) (keys want))))
      (flow/kill-job h))
    (is (every? (fn [{:keys [group lower value]}] (= value (want [group lower]))) @fns/fired)
        "every firing exact, the repeated ones included")
    (flow/close-log! l)))
