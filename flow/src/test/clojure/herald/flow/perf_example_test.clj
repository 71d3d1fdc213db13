(ns herald.flow.perf-example-test
  "The per-minute performance job of docs/flow.md, run as written: request records on a durable log, one-minute
  windows per entity x operation, count/median/p95/p99/max per closed minute."
  (:require [clojure.test :refer [deftest is]]
            [herald.flow :as flow]
            [herald.flow.log-test :refer [temp-dir]]))

(set! *warn-on-reflection* true)

(defn minute-row
  "Trigger emit: one row per closed minute per entity x operation."
  [{:keys [group lower value]}]
  (let [[entity operation] group]
    {:entity entity :operation operation :minute lower
     :count (:count value) :p50 (:p50 value) :p95 (:p95 value) :p99 (:p99 value) :max (:max value)}))

(defn perf-job [log-dir]
  {:job/name :per-minute
   :workflow [[:requests :per-minute] [:per-minute :store]]
   :catalog [{:task/name :requests :task/type :input :task/plugin :herald.flow.plugin/log-input
              :log/dir log-dir :task/batch-size 256}
             {:task/name :per-minute :task/type :reduce :task/group-by-key [:entity :operation]}
             {:task/name :store :task/type :output :task/plugin :herald.flow.plugin/fn-output}]
   :windows [{:window/id :minute :window/task :per-minute :window/type :fixed :window/range [1 :minute]
              :window/time-key :at :window/allowed-lateness [5 :seconds]
              :window/aggregation [:herald.flow/percentiles :ms]}]
   :triggers [{:trigger/window-id :minute :trigger/on :watermark
               :trigger/emit :herald.flow.perf-example-test/minute-row}]})

(defn- nearest-rank [sorted q] (nth sorted (max 0 (dec (long (Math/ceil (* q (count sorted))))))))

(deftest per-minute-performance-job
  (let [root (temp-dir "herald-perf")
        log-dir (str root "/requests")
        requests (flow/open-log log-dir)
        rows (atom [])
        job (flow/submit-job (perf-job log-dir)
                             {:data-dir (str root "/job")
                              :inject {:store {:sink/fn (fn [batch] (swap! rows into batch))}}})
        t0 1763812800000
        recs (for [i (range 6000)]
               {:entity (nth [:outbound :inbound] (mod i 2)) :operation (nth [:post :get] (mod (quot i 2) 2))
                :ms (inc (mod (* i 37) 250)) :status 200 :at (+ t0 (* i 30))})]
    (doseq [batch (partition-all 100 recs)] (flow/append-all! requests batch))
    (flow/append! requests {:entity :outbound :operation :post :ms 1 :status 200 :at (+ t0 (* 10 60000))})
    (let [want (for [[[e o m] xs] (group-by (juxt :entity :operation #(- (:at %) (mod (- (:at %) t0) 60000))) recs)]
                 [e o m xs])
          deadline (+ (System/currentTimeMillis) 60000)]
      (while (and (< (count @rows) (count want)) (< (System/currentTimeMillis) deadline)) (Thread/sleep 20))
      (flow/kill-job job)
      (is (= (count want) (count @rows)) "one row per entity x operation x minute")
      (doseq [[e o m xs] want
              :let [row (first (filter #(= [e o m] [(:entity %) (:operation %) (:minute %)]) @rows))
                    sorted (vec (sort (map :ms xs)))]]
        (is (= (count xs) (:count row)))
        (is (= (peek sorted) (:max row)))
        (doseq [[k q] [[:p50 0.5] [:p95 0.95] [:p99 0.99]]]
          (is (<= (Math/abs (- (long (k row)) (long (nearest-rank sorted q)))) 1) (str k " within HdrHistogram precision")))))))
