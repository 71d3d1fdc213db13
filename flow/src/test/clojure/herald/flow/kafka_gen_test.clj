(ns herald.flow.kafka-gen-test
  "Generated jobs (herald.flow.gen, without windows) give the same outputs and errors on Kafka Streams as in-process; all run in one Kafka Streams application."
  (:require [clojure.test :refer [deftest is testing]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.random :as random]
            [clojure.test.check.rose-tree :as rose]
            [herald.flow.gen :as g]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks]))

(set! *warn-on-reflection* true)

(defn- rename
  "`job` with every task name prefixed by `p` (the same job under other names)."
  [job p]
  (let [r #(keyword (str p (name %)))]
    (-> job
        (update :workflow (fn [es] (mapv #(mapv r %) es)))
        (update :catalog (fn [c] (mapv #(update % :task/name r) c)))
        (update :flow-conditions (fn [fcs] (mapv #(-> % (update :flow/from r)
                                                        (update :flow/to (fn [to] (if (keyword? to) to (mapv r to)))))
                                                 fcs))))))

(defn- union
  "One job holding every job of `jobs` side by side (disconnected graphs: sub-topologies of one application)."
  [jobs]
  {:job/name :generated
   :workflow (vec (mapcat :workflow jobs))
   :catalog (vec (mapcat :catalog jobs))
   :flow-conditions (vec (mapcat :flow-conditions jobs))})

(defn- shapes
  "`n` generated job shapes without windows (a global window fires only when a job completes, which a
  Kafka Streams application never does), from `seed`."
  [n seed]
  (let [g (gen/vector (gen/fmap #(assoc % :window? false) g/gen-shape) n)]
    (rose/root (gen/call-gen g (random/make-random seed) 40))))

(deftest ^:integration generated-jobs-match-the-in-process-runtime
  (kb/with-broker bootstrap
    (let [seed (System/currentTimeMillis)
          shapes (shapes 12 seed)
          jobs (map-indexed (fn [i s] (rename (g/job-of s) (str "j" i "-"))) shapes)
          inputs (apply merge (map (fn [job s] (into {} (for [i (ks/tasks-of job :input)] [i (:segments s)]))) jobs shapes))
          want (map (fn [job] (ks/run-in-process job (select-keys inputs (ks/tasks-of job :input)))) jobs)
          total (reduce + (for [w want o (vals (:outputs w))] (count o)))
          got (ks/run-on-kafka bootstrap (union jobs) inputs total {})]
      (testing (str "seed " seed "; " (:took got))
        (doseq [[i job w] (map vector (range) jobs want)]
          (is (= (update-vals (:outputs w) frequencies)
                 (update-vals (select-keys (:outputs got) (ks/tasks-of job :output)) frequencies))
              (str "job " i ": " (pr-str job))))
        (is (= (reduce + (map :errors want)) (:errors got)) "the same segment errors")
        (is (= total (reduce + (map count (vals (:outputs got))))) "nothing more")))))
