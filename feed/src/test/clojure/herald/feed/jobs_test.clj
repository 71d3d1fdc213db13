(ns herald.feed.jobs-test
  "Tests of the feed's job values and the runtime switch: the jobs are valid herald.flow jobs with the planned stages, a bad :runtime fails the start naming the key."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.jobs :as jobs]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.test-util :as u]
            [herald.flow :as flow]))

(set! *warn-on-reflection* true)

(deftest the-jobs-are-valid-flow-jobs
  (testing "fan-out: the input on its own thread, the fan-out task fused with its output on :threads threads"
    (let [job (jobs/fan-out-job (assoc posts/defaults :threads 3))]
      (is (map? (flow/validate job)))
      (is (= [[[:posts] 1] [[:fan-out :inbound] 3]] (mapv (juxt :tasks :parallelism) (flow/plan job))))))
  (testing "indexing"
    (is (= #{:posts :index :search} (set (mapcat :tasks (flow/plan (jobs/index-job posts/defaults)))))))
  (testing "per-minute: a fixed one-minute window per entity x operation with the latency aggregation"
    (let [job (flow/validate (jobs/perf-job jperf/defaults))]
      (is (= [1 :minute] (get-in job [:windows 0 :window/range])))
      (is (= [:entity :operation] (:task/group-by-key (second (:catalog job)))))
      (is (= [:timer :watermark] (map :trigger/on (:triggers job)))))))

(deftest the-task-fns-are-pure-data-functions
  (let [p {:id 9 :from 1 :ts 5 :subject "s" :story "t" :occurred "2026-11-22"}]
    (is (= {:post p :recipients [2 3]} (posts/fan-out {:post p :recipients [2 1 3 2]})) "no repeats, not the sender")
    (is (= {:post p} (posts/document {:post p :recipients [2]})))
    (is (= {:edit p} (posts/fan-out {:edit p})) "a change record passes")
    (doseq [bad [{:foo 1} {:post {:subject "no id"} :recipients [2]} {:post p :recipients "2"} {:edit {:id 9}}]
            f [posts/fan-out posts/document]]
      (is (= :herald.feed/bad-record (:type (ex-data (try (f bad) nil (catch clojure.lang.ExceptionInfo e e)))))
          (str "refused: " (pr-str bad))))
    (is (nil? (jperf/open-minute {:event :watermark :group [:a :b] :lower 0 :value {}})) "the timer's emit ignores closes")
    (is (= {:entity :a :operation :b :minute 2 :histogram nil :statuses nil :final? true}
           (jperf/closed-minute {:event :job-completed :group [:a :b] :lower 120000 :value {}})))))

(deftest a-bad-option-fails-the-start-naming-the-key
  (doseq [[overrides k v] [[{:fanout {:runtime :executor}} [:fanout :runtime] :executor]
                           [{:perf {:runtime :direct}} [:perf :runtime] :direct]
                           [{:fanout {:batch-sise 5}} [:fanout :batch-sise] 5]
                           [{:perf {:publish-ms -1}} [:perf :publish-ms] -1]
                           [{:perf {:publsh-ms 5}} [:perf :publsh-ms] 5]]]
    (let [e (try (u/start-feed! nil overrides) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= :herald.feed/system-start (:type (ex-data e))) (pr-str overrides))
      (is (= {:type :herald.feed/config :key k :value v} (ex-data (ex-cause e))) (pr-str overrides))
      (is (re-find (re-pattern (java.util.regex.Pattern/quote (str (second k)))) (ex-message (ex-cause e)))))))

(deftest the-jobs-serve-the-api
  (doseq [rt [{}]]
    (testing (pr-str rt)
      (let [sys (u/start-feed! nil rt)
            base (feed/url sys)
            id #(get-in (u/request base "/participant" :method :post :json {:name %}) [:json "id"])]
        (try
          (let [a (id "a") b (id "b")]
            (u/request base (str "/participant/" a "/friends") :method :post :json {:to (str "/participant/" b)})
            (dotimes [i 20]
              (u/request base (str "/participant/" a "/outbound") :method :post :json {:subject (str "s" i) :story "rain"}))
            (is (feed/await-fanout sys 10000))
            (is (= 20 (count (:json (u/request base (str "/participant/" b "/inbound?limit=100"))))))
            (is (= 20 (count (:json (u/request base "/outbound?keywords=rain&limit=100")))))
            (is (= 20 (reduce + (for [m (get-in (u/request base "/perf") [:json "minutes"])
                                      :when (= ["outbound" "post"] [(get m "entity") (get m "operation")])]
                                  (get m "count")))))
            (is (re-find #"(?m)^herald_feed_fanout_completed_total 20$" (:body (u/request base "/metrics")))))
          (finally (feed/stop! sys)))))))
