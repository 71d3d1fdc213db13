(ns herald.flow.test-fns
  "Task fns, predicates, hooks and sinks the flow tests name by keyword."
  (:import (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn inc-n [seg] (update seg :n inc))
(defn dbl-n [seg] (update seg :n * 2))
(defn split [seg] [(assoc seg :half 0) (assoc seg :half 1)])
(defn drop-odd [seg] (when (even? (:n seg)) seg))
(defn boom-7 [seg] (if (zero? (mod (:n seg) 7)) (throw (ex-info "seven" {:n (:n seg)})) seg))
(defn add [k seg] (update seg :n + k))
(defn not-a-result [_] 42)

(defn even-n? [seg] (even? (:n seg)))
(defn big? [seg] (> (:n seg) 50))
(defn small-k? [seg] (< (:k seg 0) 2))
(defn any-ex? [_seg _e] true)
(defn seven? [_seg e] (= "seven" (.getMessage ^Throwable e)))
(defn err->seg [seg e] {:failed (:n seg) :msg (.getMessage ^Throwable e)})

(def fired (atom []))
(defn collect-fired! [f] (swap! fired conj f))
(defn fired->seg [f] (let [v (:value f)] (merge (if (map? v) v {:value v}) (select-keys f [:group :lower :event]))))

(def late (atom []))
(defn on-late [_window seg] (swap! late conj seg))

(def hook-log (atom []))
(def counting-calls
  {:lifecycle/before-task-start (fn [ev _] (swap! hook-log conj [:start (:task/names ev)]) {:started true})
   :lifecycle/before-batch (fn [ev _] (swap! hook-log conj [:before (count (:batch ev)) (:started ev)]) nil)
   :lifecycle/after-batch (fn [_ _] (swap! hook-log conj [:after]) nil)
   :lifecycle/after-task-stop (fn [ev _] (swap! hook-log conj [:stop (:task/names ev)]) nil)})

(def ^AtomicLong slow-nanos (AtomicLong. 0))
(defn slow [seg] (let [n (.get slow-nanos)] (when (pos? n) (java.util.concurrent.locks.LockSupport/parkNanos n))) seg)

(def sum-of-squares
  "A custom aggregation: the sum of the squares of :n."
  {:aggregation/init (fn [_] 0)
   :aggregation/create-state-update (fn [_ _ seg] (* (:n seg) (:n seg)))
   :aggregation/apply-state-update (fn [_ s v] (+ s v))})

(defn collect-value [f] (select-keys f [:event :value :lower :group]))

(def failing-calls
  {:lifecycle/before-batch (fn [_ _] (throw (ex-info "hook broke" {})))
   :lifecycle/handle-exception (fn [_ _ phase e] (swap! hook-log conj [:handled phase (.getMessage ^Throwable e)]) :kill)})
