(ns herald.load.aggregate-test
  "Per-minute aggregation against a naive computation, and the reference log line format."
  (:require [clojure.test :refer [deftest is]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.load :as load]
            [herald.load.impl.aggregate :as agg])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(def ^:private t0 1795000000000) ; 2026-11-19, a whole minute

(def gen-record
  (gen/let [offset (gen/choose 0 (* 5 60000))
            entity (gen/elements ["participant" "friends" "outbound" "inbound"])
            op (gen/elements ["get" "post" "search"])
            us (gen/frequency [[8 (gen/choose 0 50000)] [1 (gen/choose 0 5000000)]])]
    {:time-ms (+ t0 offset) :entity entity :operation op :latency-us us}))

(defn- nearest-rank
  "The naive percentile: the ceil(p/100 x n)-th smallest value."
  [sorted p]
  (nth sorted (dec (max 1 (long (Math/ceil (* (/ p 100.0) (count sorted))))))))

(defn- naive [records]
  (->> records
       (group-by (juxt #(quot (:time-ms %) 60000) :entity :operation))
       (map (fn [[[m e o] rs]]
              (let [v (vec (sort (map :latency-us rs)))]
                [[(* m 60000) e o] {:count (count v) :median (nearest-rank v 50) :p95 (nearest-rank v 95)
                                    :p99 (nearest-rank v 99) :max (peek v)}])))
       (into {})))

(defn- close?
  "True when the aggregate `ms` is the naive microsecond value within HdrHistogram's 3-digit precision."
  [ms us]
  (let [h (Histogram. 3)]
    (.valuesAreEquivalent h (long us) (Math/round (* 1000.0 (double ms))))))

(defspec per-minute-aggregates-match-a-naive-computation 60
  (prop/for-all [records (gen/vector gen-record 1 400)]
    (let [expected (naive records)
          rows (agg/aggregate records)]
      (and (= (count expected) (count rows))
           (= (sort (keys expected)) (map (juxt :minute-ms :entity :operation) rows))
           (every? (fn [row]
                     (let [e (expected [(:minute-ms row) (:entity row) (:operation row)])]
                       (and (= (:count e) (:count row))
                            (every? #(close? (% row) (% e)) [:median :p95 :p99 :max]))))
                   rows)))))

(deftest log-lines-round-trip-with-zero-based-months
  (let [t (.toEpochMilli (java.time.Instant/parse "2026-11-22T13:05:42Z"))
        line (agg/format-log-line t "outbound" "post" 17900)]
    (is (= "2026|10|22|13|5|outbound|post|17" line))
    (is (= {:time-ms (.toEpochMilli (java.time.Instant/parse "2026-11-22T13:05:00Z")) :entity "outbound"
            :operation "post" :latency-us 17000}
           (agg/parse-log-line line)))
    (is (nil? (agg/parse-log-line "  ")))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"not a YEAR" (agg/parse-log-line "2026|10|22")))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"bad field" (agg/parse-log-line "2026|10|x|13|5|a|b|1")))))

(deftest aggregate-log-reads-reference-lines
  (let [log (str "2026|10|22|13|5|outbound|post|10\n2026|10|22|13|5|outbound|post|30\n"
                 "2026|10|22|13|5|outbound|post|20\n2026|10|22|13|6|participant|post|5\n")
        rows (load/aggregate-log (java.io.StringReader. log))]
    (is (= [{:minute "2026-11-22T13:05Z" :entity "outbound" :operation "post" :count 3 :median 20.0 :p95 30.0 :p99 30.0 :max 30.0}
            {:minute "2026-11-22T13:06Z" :entity "participant" :operation "post" :count 1 :median 5.0 :p95 5.0 :p99 5.0 :max 5.0}]
           (map #(dissoc % :minute-ms) rows)))
    (is (= (str "minute,entity,operation,count,median_ms,p95_ms,p99_ms,max_ms\n"
                "2026-11-22T13:05Z,outbound,post,3,20.0,30.0,30.0,30.0\n"
                "2026-11-22T13:06Z,participant,post,1,5.0,5.0,5.0,5.0")
           (load/per-minute-csv rows)))))
