(ns herald.flow.impl.metrics
  "Per-task metrics: segments in and out, errors, late segments, batch latency quantiles and throughput."
  (:import (java.util.concurrent.atomic LongAdder)
           (org.HdrHistogram Histogram Recorder)))

(set! *warn-on-reflection* true)

(defrecord TaskMetrics [^LongAdder in ^LongAdder out ^LongAdder errors ^LongAdder late ^LongAdder batches
                        ^Recorder recorder ^Histogram total rate])

(defn task-metrics []
  (->TaskMetrics (LongAdder.) (LongAdder.) (LongAdder.) (LongAdder.) (LongAdder.) (Recorder. 3)
                 (doto (Histogram. 3) (.setAutoResize true)) (atom {:at (System/nanoTime) :in 0 :sps 0.0})))

(defn record-batch!
  "Counts a batch of `n-in` segments in and `n-out` out that took `nanos`."
  [^TaskMetrics m ^long n-in ^long n-out ^long nanos]
  (.add ^LongAdder (:in m) n-in)
  (.add ^LongAdder (:out m) n-out)
  (.increment ^LongAdder (:batches m))
  (.recordValue ^Recorder (:recorder m) (max 0 nanos)))

(defn error! [^TaskMetrics m] (.increment ^LongAdder (:errors m)))

(defn late! [^TaskMetrics m ^long n] (when (pos? n) (.add ^LongAdder (:late m) n)))

(defn sample!
  "Updates the task's throughput (segments in per second since the previous sample)."
  [^TaskMetrics m]
  (let [now (System/nanoTime) in (.sum ^LongAdder (:in m))]
    (swap! (:rate m) (fn [{:keys [at] :as r}]
                       (let [dt (/ (- now (long at)) 1e9)]
                         (if (< dt 0.2) r {:at now :in in :sps (/ (- in (long (:in r))) dt)}))))))

(defn report
  "A map of the task's figures; latency quantiles are of batch processing time, in microseconds."
  [^TaskMetrics m]
  (let [^Histogram h (locking m (doto ^Histogram (:total m) (.add (.getIntervalHistogram ^Recorder (:recorder m)))))
        us (fn [q] (/ (.getValueAtPercentile h q) 1000.0))]
    {:segments-in (.sum ^LongAdder (:in m))
     :segments-out (.sum ^LongAdder (:out m))
     :batches (.sum ^LongAdder (:batches m))
     :errors (.sum ^LongAdder (:errors m))
     :late (.sum ^LongAdder (:late m))
     :throughput-sps (double (:sps @(:rate m)))
     :batch-latency-us {:p50 (us 50.0) :p90 (us 90.0) :p99 (us 99.0) :p999 (us 99.9)
                        :max (/ (.getMaxValue h) 1000.0) :mean (/ (.getMean h) 1000.0)}}))
