(ns herald.flow.impl.aggregation
  "Window aggregations: the built-ins (count, sum, min, max, average, collect, percentiles) and custom ones named by keyword."
  (:require [clojure.string :as str]
            [herald.flow.impl.types :as t])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- key-arg [window]
  (let [a (:window/aggregation window)] (when (vector? a) (second a))))

(defn- numeric [window kw]
  (let [k (key-arg window)]
    (when-not (keyword? k)
      (t/invalid! [:windows (:window/id window) :window/aggregation] :window/aggregation (:window/aggregation window)
                  "needs the segment key to aggregate" (str "write [" kw " :my-key]")))
    k))

(defn- simple
  "An aggregation whose update is the segment's value at the key and whose state is folded by `f`."
  [window kw init f]
  (let [k (numeric window kw)]
    {:aggregation/init (fn [_] init)
     :aggregation/create-state-update (fn [_ _ seg] (get seg k))
     :aggregation/apply-state-update (fn [_ state v] (if (nil? v) state (f state v)))}))

(def ^:private default-quantiles [0.5 0.9 0.95 0.99 0.999])

(defn- qkey [q] (keyword (str "p" (str/replace (str (* 100 (double q))) #"\.0$|\." ""))))

(defn- percentiles [window]
  (let [k (numeric window :herald.flow/percentiles)
        opts (nth (:window/aggregation window) 2 {})
        digits (int (:significant-digits opts 3))
        qs (:quantiles opts default-quantiles)
        qks (mapv qkey qs)]
    {:aggregation/init (fn [_] (doto (Histogram. digits) (.setAutoResize true)))
     :aggregation/create-state-update (fn [_ _ seg] (get seg k))
     :aggregation/apply-state-update (fn [_ ^Histogram h v] (when (some? v) (.recordValue h (max 0 (long v)))) h)
     :aggregation/extract
     (fn [_ ^Histogram h]
       (let [n (.getTotalCount h)]
         (into {:count n
                :min (if (zero? n) 0 (.getMinValue h))
                :max (if (zero? n) 0 (.getMaxValue h))
                :mean (.getMean h)}
               (map (fn [q qk] [qk (.getValueAtPercentile h (* 100.0 (double q)))]) qs qks))))}))

(defn aggregation
  "The aggregation map of `window` ({:aggregation/init, :aggregation/create-state-update,
  :aggregation/apply-state-update, :aggregation/extract})."
  [window]
  (let [a (:window/aggregation window)
        kw (if (vector? a) (first a) a)
        m (case kw
            :herald.flow/count {:aggregation/init (fn [_] 0)
                                :aggregation/create-state-update (fn [_ _ _] 1)
                                :aggregation/apply-state-update (fn [_ s n] (+ (long s) (long n)))}
            :herald.flow/sum (simple window kw 0 +)
            :herald.flow/min (simple window kw nil #(if (nil? %1) %2 (min %1 %2)))
            :herald.flow/max (simple window kw nil #(if (nil? %1) %2 (max %1 %2)))
            :herald.flow/average (assoc (simple window kw [0 0] (fn [[s n] v] [(+ s v) (inc (long n))]))
                                        :aggregation/extract (fn [_ [s n]] (when (pos? (long n)) (/ (double s) (double n)))))
            :herald.flow/collect {:aggregation/init (fn [_] [])
                                  :aggregation/create-state-update (fn [_ _ seg] seg)
                                  :aggregation/apply-state-update (fn [_ s seg] (conj s seg))}
            :herald.flow/percentiles (percentiles window)
            (if (= "herald.flow" (namespace kw))
              (t/invalid! [:windows (:window/id window) :window/aggregation] :window/aggregation a
                          "is not a built-in aggregation"
                          "use :herald.flow/count, sum, min, max, average, collect or percentiles")
              (t/fn-ref! [:windows (:window/id window) :window/aggregation] :window/aggregation kw :map)))]
    (merge {:aggregation/extract (fn [_ s] s)} m)))
