(ns herald.feed.perf-model
  "The per-minute figures' model for tests: a `herald.feed.perf/Recorder` computing, single-threaded, one plain HdrHistogram per minute x entity x operation of the requests given, so a recorder's views can be compared with the views of the union of its requests."
  (:require [herald.feed.perf :as perf])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- cell [recs]
  (let [h (Histogram. 3)]
    (doseq [[_ _ nanos] recs] (.recordValue h (max 0 (quot (long nanos) 1000))))
    {:histogram h :errors (count (filter #(>= (long (nth % 3)) 400) recs))}))

(defn model
  "A Recorder over requests `recs` ([entity op nanos status start-ms] each): its minutes, totals and status
  counts are those of the union; a minute is closed once its end plus `lateness-ms` is before `(clock)`.
  Recording into it is refused."
  [recs clock lateness-ms]
  (let [by-minute (group-by #(quot (long (peek %)) 60000) recs)]
    (reify perf/Recorder
      (-record! [_ _ _ _ _ _] (throw (ex-info "the model takes its requests at construction" {:type ::read-only})))
      (-now-ms [_] (long (clock)))
      (-minutes [_ lo hi]
        (for [m (sort (keys by-minute)) :when (<= (long lo) (long m) (long hi))]
          [m (into {} (map (fn [[k rs]] [k (cell rs)])) (group-by (comp vec (partial take 2)) (by-minute m)))]))
      (-closed? [_ minute] (<= (+ (* (inc (long minute)) 60000) (long lateness-ms)) (long (clock))))
      (-totals [_] (into {} (map (fn [[k rs]] [k (cell rs)])) (group-by (comp vec (partial take 2)) recs)))
      (-status-counts [_] (frequencies (map (fn [[e op _ s]] [e op s]) recs)))
      (-await [_ _] true)
      (-recorder-stats [_] {:recorded (count recs) :dropped 0 :late 0})
      (-close-recorder! [_ _] true))))

(defn views
  "Every view of recorder `r` as plain data, for comparing two recorders: figures, log lines, status counts
  and totals (without their histograms)."
  [r]
  {:figures (vec (perf/figures r nil nil))
   :log (vec (perf/log-lines r nil nil))
   :status-counts (perf/status-counts r)
   :totals (update-vals (perf/totals r) #(dissoc % :histogram))})
