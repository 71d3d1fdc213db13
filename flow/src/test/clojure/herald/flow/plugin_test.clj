(ns herald.flow.plugin-test
  "The built-in plugins refuse a job at submit time when a required option is missing or wrong, naming the task, the key and the fix."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.plugin :as plugin])
  (:import (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util.concurrent ArrayBlockingQueue)))

(set! *warn-on-reflection* true)

(defn- job [in-plugin out-plugin]
  {:workflow [[:in :inc] [:inc :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin in-plugin}
             {:task/name :inc :task/type :function :task/fn :herald.flow.test-fns/inc-n}
             {:task/name :out :task/type :output :task/plugin out-plugin}]})

(def ^:private base (job :herald.flow.plugin/seq-input :herald.flow.plugin/collecting-output))

(defn- refusal
  "The ex-data (plus :message) `submit-job` throws for `job` and `inject`; when it starts the job instead, the
  job is awaited and its status returned under :accepted."
  [job inject]
  (try (let [h (flow/submit-job job {:inject inject})]
         {:accepted (flow/await-job h 10000)})
       (catch clojure.lang.ExceptionInfo e (assoc (ex-data e) :message (ex-message e)))))

(defn- refused-naming? [r task key]
  (and (= :herald.flow/invalid-job (:type r)) (= task (:task r)) (= key (:key r))
       (str/includes? (:message r) (pr-str key)) (str/includes? (:message r) (str "task " task))))

(deftest a-seq-input-without-segments-is-refused-at-submit
  (let [sink (atom [])
        r (refusal base {:out {:sink/atom sink}})]
    (is (refused-naming? r :in :seq/segments) (pr-str r))
    (is (= [:catalog :in :seq/segments] (:path r)))
    (is (re-find #"is missing" (:message r)))
    (is (str/includes? (:hint r) ":inject {:in {:seq/segments") "the fix says how to inject it")
    (is (= [] @sink) "nothing ran"))
  (testing "a string or a single map is not a collection of segments"
    (doseq [bad ["abc" {:n 1} 42]]
      (let [r (refusal base {:in {:seq/segments bad} :out {:sink/atom (atom [])}})]
        (is (refused-naming? r :in :seq/segments) (pr-str bad))
        (is (= bad (:value r))))))
  (testing "an empty collection is a valid (empty) input"
    (is (= :completed (get-in (refusal base {:in {:seq/segments []} :out {:sink/atom (atom [])}}) [:accepted :status]))))
  (testing "given its segments, the job runs them"
    (let [sink (atom [])]
      (is (= :completed (get-in (refusal base {:in {:seq/segments [{:n 1} {:n 2}]} :out {:sink/atom sink}}) [:accepted :status])))
      (is (= [2 3] (sort (map :n @sink)))))))

(deftest every-built-in-plugin-refuses-a-missing-or-wrong-option
  (let [segs {:seq/segments [{:n 1}]}
        dir (str (Files/createTempDirectory "plugin-test" (make-array FileAttribute 0)))]
    (doseq [[what j inject task key]
            [["queue-input without a queue" (job :herald.flow.plugin/queue-input :herald.flow.plugin/discard-output) {} :in :queue/queue]
             ["queue-input with a vector" (job :herald.flow.plugin/queue-input :herald.flow.plugin/discard-output)
              {:in {:queue/queue []}} :in :queue/queue]
             ["log-input without a dir" (job :herald.flow.plugin/log-input :herald.flow.plugin/discard-output) {} :in :log/dir]
             ["log-input with a bad start" (job :herald.flow.plugin/log-input :herald.flow.plugin/discard-output)
              {:in {:log/dir dir :log/start-from :middle}} :in :log/start-from]
             ["log-input with a string poll-ms" (job :herald.flow.plugin/log-input :herald.flow.plugin/discard-output)
              {:in {:log/dir dir :log/poll-ms "100"}} :in :log/poll-ms]
             ["fn-output without a fn" (job :herald.flow.plugin/seq-input :herald.flow.plugin/fn-output) {:in segs} :out :sink/fn]
             ["collecting-output without an atom" base {:in segs} :out :sink/atom]
             ["collecting-output with a vector" base {:in segs :out {:sink/atom []}} :out :sink/atom]]]
      (testing what
        (is (refused-naming? (refusal j inject) task key) (pr-str (refusal j inject)))))
    (testing "a queue-input with its queue runs"
      (let [q (ArrayBlockingQueue. 4) sink (atom [])]
        (.put q {:n 1}) (.put q plugin/end-of-input)
        (is (= :completed (get-in (refusal (job :herald.flow.plugin/queue-input :herald.flow.plugin/collecting-output)
                                           {:in {:queue/queue q} :out {:sink/atom sink}})
                                  [:accepted :status])))
        (is (= [{:n 2}] @sink))))))
