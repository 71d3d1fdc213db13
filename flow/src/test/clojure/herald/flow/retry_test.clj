(ns herald.flow.retry-test
  "Output retries in-process: a failing output is retried with a doubling backoff and logs one line when it starts failing and one when it works again; past :output/retries the job fails; the keys are validated."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.impl.retry :as retry]))

(set! *warn-on-reflection* true)

(defn- job [out-extra]
  {:job/name :retrying
   :workflow [[:in :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :task/batch-size 10}
             (merge {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/fn-output} out-extra)]})

(defn- flaky
  "A sink fn that throws on its first `n` calls, then appends to `got`; `calls` gets each call's time."
  [n got calls]
  (fn [segs]
    (swap! calls conj (System/currentTimeMillis))
    (when (<= (count @calls) n) (throw (ex-info "store down" {})))
    (swap! got into segs)))

(defn- run [out-extra sink]
  (let [lines (atom [])]
    (with-redefs [retry/log-line! (fn [s] (swap! lines conj s))]
      (let [h (flow/submit-job (job out-extra) {:inject {:in {:seq/segments (map #(hash-map :n %) (range 50))}
                                                         :out {:sink/fn sink}}})
            st (flow/await-job h 20000)]
        {:status st :lines @lines :metrics (get-in (flow/job-metrics h) [:tasks :out])}))))

(deftest a-failing-output-is-retried-with-a-doubling-backoff
  (let [got (atom []) calls (atom [])
        {:keys [status lines metrics]} (run {:output/retries 5 :output/backoff-ms 40 :output/backoff-max-ms 100}
                                            (flaky 4 got calls))]
    (is (= :completed (:status status)))
    (is (= (range 50) (map :n @got)) "every segment written once the store is back, in order")
    (let [gaps (map - (rest @calls) @calls)]
      (is (every? (fn [[g want]] (<= want g)) (map vector (take 4 gaps) [40 80 100 100]))
          (str "waits at least 40, 80, then 100 ms: " (vec gaps)))
      (is (= [40 80 100 100 100] (map #(#'retry/wait-ms {:backoff-ms 40 :backoff-max-ms 100} %) (range 1 6)))
          "the waits double from :output/backoff-ms and stop at :output/backoff-max-ms"))
    (testing "one line when writes start failing, one when they work again"
      (is (= 2 (count lines)) (pr-str lines))
      (is (str/includes? (first lines) "output :out of job :retrying failing, retrying (up to 5 times, first wait 40 ms)"))
      (is (str/includes? (second lines) "writing again after 4 failed attempts")))
    (is (= {:write-failures 4 :failing? false} (select-keys metrics [:write-failures :failing?])))))

(deftest past-its-retries-the-job-fails
  (let [{:keys [status lines]} (run {:output/retries 2 :output/backoff-ms 5} (flaky 1000 (atom []) (atom [])))]
    (is (= :failed (:status status)))
    (is (= "store down" (ex-message (:error status))) "the write's own exception, as without retries")
    (is (= 2 (count lines)))
    (is (str/includes? (last lines) "gave up after 2 retries")))
  (testing "without :output/retries a failing write fails the job at once, with no log line"
    (let [{:keys [status lines]} (run {} (flaky 1000 (atom []) (atom [])))]
      (is (= :failed (:status status)))
      (is (empty? lines)))))

(deftest retry-keys-are-validated
  (let [refusal (fn [extra] (try (flow/validate (job extra)) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))]
    (is (nil? (refusal {:output/retries :forever})))
    (is (nil? (refusal {:output/retries 0 :output/backoff-ms 1 :output/backoff-max-ms 1})))
    (is (= [:output/retries -1] ((juxt :key :value) (refusal {:output/retries -1}))))
    (is (= [:output/retries :always] ((juxt :key :value) (refusal {:output/retries :always}))))
    (is (str/includes? (:hint (refusal {:output/retries :always})) "a non-negative integer or :forever"))
    (is (= :output/backoff-ms (:key (refusal {:output/backoff-ms 0}))))
    (is (= :output/backoff-max-ms (:key (refusal {:output/backoff-ms 500 :output/backoff-max-ms 100}))))
    (is (= [:output/retrys "did you mean :output/retries?"] ((juxt :key :hint) (refusal {:output/retrys 3}))) "a typo is named")
    (is (= :output/retries (:key (try (flow/validate (update-in (job {}) [:catalog 0] assoc :output/retries 1)) nil
                                      (catch clojure.lang.ExceptionInfo e (ex-data e)))))
        "outputs only")))

(deftest past-give-up-after-ms-a-failing-segment-is-handed-on-and-the-output-goes-on
  (let [errors (atom []) got (atom []) calls (atom 0) lines (atom [])
        ;; segment 7 fails every time (whatever the error: not a rejection), the others always succeed
        sink (fn [segs] (swap! calls inc)
               (when (some #(= 7 (:n %)) segs) (throw (ex-info "store down for good" {})))
               (swap! got into segs))
        t0 (System/currentTimeMillis)]
    (with-redefs [retry/log-line! (fn [s] (swap! lines conj s))]
      (let [h (flow/submit-job (job {:output/retries :forever :output/backoff-ms 20 :output/backoff-max-ms 40
                                     :output/give-up-after-ms 300})
                               {:inject {:in {:seq/segments (map #(hash-map :n %) (range 30))} :out {:sink/fn sink}}
                                :on-error #(swap! errors conj %)})
            st (flow/await-job h 20000)]
        (is (= :completed (:status st)) "the output went on past the segment that never gets written")
        (is (= (remove #{7} (range 30)) (sort (map :n @got))) "every other segment written")
        (is (= 1 (count @errors)))
        (let [{:keys [segment exception attempts first-failure-at last-failure-at task]} (first @errors)]
          (is (= [{:n 7} :out "store down for good"] [segment task (ex-message exception)]))
          (is (<= 300 (- last-failure-at first-failure-at)) "handed on only after the budget")
          (is (<= t0 first-failure-at last-failure-at (System/currentTimeMillis)))
          (is (< 3 attempts 40) (str "retried under the backoff meanwhile: " attempts)))
        (is (= 1 (get-in (flow/job-metrics h) [:tasks :out :rejected-segments])))
        (is (some #(str/includes? % "gave up on 1 of 10 segments (handed to :on-error) after") @lines) (pr-str @lines))
        (is (not-any? #(str/includes? % "writing again") @lines) "giving up is not reported as writing again")))))

(deftest a-failure-shorter-than-give-up-after-ms-hands-nothing-on
  (let [errors (atom []) got (atom []) calls (atom [])
        h (flow/submit-job (job {:output/retries :forever :output/backoff-ms 20 :output/backoff-max-ms 40
                                 :output/give-up-after-ms 5000})
                           {:inject {:in {:seq/segments (map #(hash-map :n %) (range 50))} :out {:sink/fn (flaky 4 got calls)}}
                            :on-error #(swap! errors conj %)})]
    (is (= :completed (:status (flow/await-job h 20000))))
    (is (= (range 50) (map :n @got)) "a short outage heals: every segment written once, in order")
    (is (empty? @errors))))

(deftest a-split-past-its-poll-budget-hands-the-rest-on-untried
  ;; every write waits 40 ms then fails (a server that times out): a full split of 16 segments is 31 writes; with
  ;; a 100 ms budget the split stops trying after a few and hands the rest on with the last failure
  (let [p (retry/policy {:task/name :out :output/retries :forever :output/backoff-ms 1 :output/backoff-max-ms 1
                         :output/give-up-after-ms 1} :j)
        ^java.util.concurrent.atomic.AtomicLong failures (:failures (retry/state))
        st (retry/state)
        writes (atom 0) handed (atom [])]
    (.set ^java.util.concurrent.atomic.AtomicLong (:failures st) 3)
    (.set ^java.util.concurrent.atomic.AtomicLong (:since st) (- (System/currentTimeMillis) 1000))
    (with-redefs [retry/log-line! (fn [_])]
      (retry/write! p st 100 (fn [_] (swap! writes inc) (Thread/sleep 40) (throw (ex-info "timed out" {})))
                    (fn [seg e info] (swap! handed conj [seg (ex-message e) (:attempts info)]))
                    (vec (range 16))))
    (is (= (range 16) (map first @handed)) "every segment handed on, in order")
    (is (every? #(= "timed out" (second %)) @handed))
    (is (< 1 @writes 10) (str "the split stopped trying at the budget: " @writes " writes"))
    (is (zero? (.get failures)))
    (is (= 16 (:rejected-segments (retry/failures [st]))))))

(deftest a-split-after-retries-in-the-same-call-stops-at-the-calls-budget
  ;; retries in this call block the thread before the run passes give-up-after-ms: the split that follows gets
  ;; only what is left of the call's 500 ms budget, not 500 ms more (on Kafka Streams: max.poll.interval.ms)
  (let [p (retry/policy {:task/name :out :output/retries :forever :output/backoff-ms 50 :output/backoff-max-ms 50
                         :output/give-up-after-ms 300} :j)
        st (retry/state)
        handed (atom 0)
        t0 (System/currentTimeMillis)]
    (with-redefs [retry/log-line! (fn [_])]
      (retry/write! p st 500 (fn [_] (Thread/sleep 40) (throw (ex-info "timed out" {})))
                    (fn [_ _ _] (swap! handed inc))
                    (vec (range 16))))
    (let [ms (- (System/currentTimeMillis) t0)]
      (is (= 16 @handed))
      (is (< ms 700) (str "the call blocked " ms " ms for a 500 ms budget")))))

(deftest a-segment-whose-hand-on-failed-is-not-counted-as-handed-on
  ;; the dead-letter send fails twice (on-reject throws): the write counts as failed and is tried again; only the
  ;; segment handed on in the end counts in :rejected-segments
  (let [p (retry/policy {:task/name :out :output/retries :forever :output/backoff-ms 1 :output/backoff-max-ms 1
                         :output/give-up-after-ms 1} :j)
        st (retry/state)
        sends (atom 0)]
    (.set ^java.util.concurrent.atomic.AtomicLong (:failures st) 3)
    (.set ^java.util.concurrent.atomic.AtomicLong (:since st) (- (System/currentTimeMillis) 1000))
    (with-redefs [retry/log-line! (fn [_])]
      (retry/write! p st nil (fn [_] (throw (ex-info "store down" {})))
                    (fn [_ _ _] (when (<= (swap! sends inc) 2) (throw (ex-info "dead-letter topic down" {}))))
                    [:a]))
    (is (= 3 @sends))
    (is (= 1 (:rejected-segments (retry/failures [st]))))))

(deftest a-long-run-of-failures-logs-a-reminder-not-a-line-per-attempt
  ;; :remind-ms (60 s in the policies the runtimes build) at 100 ms: a write failing for ~450 ms at 10 ms a try
  ;; logs the first line, a few reminders, and the line when it works again, never one per attempt
  (let [p (assoc (retry/policy {:task/name :out :output/retries :forever :output/backoff-ms 10 :output/backoff-max-ms 10} :j)
                 :remind-ms 100)
        st (retry/state) lines (atom []) tries (atom 0) until (+ (System/currentTimeMillis) 450)]
    (with-redefs [retry/log-line! (fn [s] (swap! lines conj s))]
      (retry/call! p st (fn [] (swap! tries inc) (when (< (System/currentTimeMillis) until) (throw (ex-info "store down" {}))) :ok)))
    (let [reminders (filter #(str/includes? % "still failing after") @lines)]
      (is (< 10 @tries) (str @tries " attempts"))
      (is (<= 2 (count reminders) 6) (pr-str @lines))
      (is (str/includes? (first @lines) "failing, retrying (forever"))
      (is (str/includes? (last @lines) "writing again after"))
      (is (= (+ 2 (count reminders)) (count @lines))))))

(deftest on-error-policy-names-the-task-in-its-lines
  (let [st (retry/state) lines (atom []) n (atom 0)]
    (with-redefs [retry/log-line! (fn [s] (swap! lines conj s))]
      (retry/call! (assoc (retry/on-error-policy :posts :fan-out) :backoff-ms 5) st
                   #(when (<= (swap! n inc) 2) (throw (ex-info "dead-letter topic down" {})))))
    (is (= 3 @n))
    (is (= [":on-error of task :posts of job :fan-out failing, retrying (forever" ":on-error of task :posts of job :fan-out handling errors again after 2 failed attempts"]
           (map #(re-find #":on-error.*?(?:forever|attempts)" %) @lines)))))
