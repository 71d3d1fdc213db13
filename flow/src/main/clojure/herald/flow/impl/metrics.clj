(ns herald.flow.impl.metrics
  "Per-task metrics: segments in and out, errors, late segments, batch latency quantiles and throughput."
  (:import (org.HdrHistogram Histogram SingleWriterRecorder)))

(set! *warn-on-reflection* true)

(deftype Part [^longs counts ^SingleWriterRecorder recorder])

(def ^:private ^:const in-i 0)
(def ^:private ^:const out-i 1)
(def ^:private ^:const errors-i 2)
(def ^:private ^:const late-i 3)
(def ^:private ^:const batches-i 4)

(defrecord TaskMetrics [parts ^Histogram total rate])

(defn task-metrics
  "The metrics of one task: parts per thread, a merged latency histogram and the last throughput sample."
  []
  (->TaskMetrics (atom []) (doto (Histogram. 3) (.setAutoResize true)) (atom {:at (System/nanoTime) :in 0 :sps 0.0})))

(defn part
  "A new part of task metrics `m` for one thread: written by that thread only, summed by readers."
  ^Part [^TaskMetrics m]
  (let [p (Part. (long-array 5) (SingleWriterRecorder. 3))]
    (swap! (:parts m) conj p)
    p))

(defn record-batch!
  "Counts a batch of `n-in` segments in and `n-out` out that took `nanos` (negative: not timed)."
  [^Part p ^long n-in ^long n-out ^long nanos]
  (let [^longs c (.counts p)]
    (aset c in-i (+ (aget c in-i) n-in))
    (aset c out-i (+ (aget c out-i) n-out))
    (aset c batches-i (inc (aget c batches-i))))
  (when (>= nanos 0) (.recordValue ^SingleWriterRecorder (.recorder p) nanos)))

(defn error!
  "Counts one error."
  [^Part p] (let [^longs c (.counts p)] (aset c errors-i (inc (aget c errors-i)))))

(defn late!
  "Counts `n` late segments."
  [^Part p ^long n] (when (pos? n) (let [^longs c (.counts p)] (aset c late-i (+ (aget c late-i) n)))))

(defn- total ^long [^TaskMetrics m ^long i] (reduce (fn [^long acc ^Part p] (+ acc (aget ^longs (.counts p) i))) 0 @(:parts m)))

(defn sample!
  "Updates the task's throughput (segments in per second since the previous sample)."
  [^TaskMetrics m]
  (let [now (System/nanoTime) in (total m in-i)]
    (swap! (:rate m) (fn [{:keys [at] :as r}]
                       (let [dt (/ (- now (long at)) 1e9)]
                         (if (< dt 0.2) r {:at now :in in :sps (/ (- in (long (:in r))) dt)}))))))

(defn counters
  "The task's counters only: `{:segments-in :segments-out :batches :errors :late}`, summed over its threads'
  parts without touching the latency histograms (cheap: a few array reads per thread, no allocation of
  histograms). Read without locking: a count may lag its thread by the batch in flight."
  [^TaskMetrics m]
  (let [in (long-array 5)]
    (doseq [^Part p @(:parts m)]
      (let [^longs c (.counts p)]
        (dotimes [i 5] (aset in i (+ (aget in i) (aget c i))))))
    {:segments-in (aget in in-i) :segments-out (aget in out-i) :batches (aget in batches-i)
     :errors (aget in errors-i) :late (aget in late-i)}))

(defn report
  "A map of the task's figures; latency quantiles are of batch processing time, in microseconds."
  [^TaskMetrics m]
  (let [^Histogram h (locking m
                       (let [^Histogram h (:total m)]
                         (doseq [^Part p @(:parts m)] (.add h (.getIntervalHistogram ^SingleWriterRecorder (.recorder p))))
                         h))
        us (fn [q] (/ (.getValueAtPercentile h q) 1000.0))]
    {:segments-in (total m in-i)
     :segments-out (total m out-i)
     :batches (total m batches-i)
     :errors (total m errors-i)
     :late (total m late-i)
     :throughput-sps (double (:sps @(:rate m)))
     :batch-latency-us {:p50 (us 50.0) :p90 (us 90.0) :p99 (us 99.0) :p999 (us 99.9)
                        :max (/ (.getMaxValue h) 1000.0) :mean (/ (.getMean h) 1000.0)}}))
