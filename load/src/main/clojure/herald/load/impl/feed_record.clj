(ns herald.load.impl.feed-record
  "Thread-safe recording of feed requests as (entity, operation, status, latency): per-operation
  histograms, statuses, errors by kind, per-minute aggregates, an interval recorder for progress, and
  optionally the reference performance log."
  (:require [clojure.java.io :as io]
            [herald.load.impl.aggregate :as agg]
            [herald.load.impl.histogram :as hist])
  (:import (java.io Writer)
           (java.util HashMap Map)
           (org.HdrHistogram Histogram Recorder)))

(set! *warn-on-reflection* true)

(defn- sink
  "The structures one recorder fills: histograms, statuses, errors, minutes, interval recorder, optional log."
  [log-file]
  {:lock (Object.)
   :ops (HashMap.)
   :status (HashMap.)
   :errors (HashMap.)
   :minutes (agg/aggregator)
   :interval (Recorder. 3)
   :interval-errors (java.util.concurrent.atomic.AtomicLong.)
   :log (when log-file (io/make-parents (io/file log-file)) (io/writer (io/file log-file)))})

(defn- clamp-ms
  "`ms` within 0..4e18, so that an epoch ms minus it never overflows (Long/MIN_VALUE: record all, MAX_VALUE: none)."
  ^long [ms]
  (max 0 (min (long ms) 4000000000000000000)))

(defn recorder
  "A new recorder; `log-file` (optional) receives one reference log line per answered request. Requests
  started before epoch ms `from-ms` (a warm-up; `record-from!` moves it) are not recorded: they go through the
  same code into a second set of structures nobody reads, so that the code that records is compiled during the
  warm-up and the window does not begin with its compilation (and deoptimisations of what inlined it)."
  ([log-file] (recorder log-file Long/MIN_VALUE))
  ([log-file from-ms]
   (let [sinks (object-array 2)
         r (assoc (sink log-file)
                  :from-ms (java.util.concurrent.atomic.AtomicLong. (clamp-ms from-ms))
                  :sinks sinks)]
     ;; index 0: recorded; 1: the warm-up's, read by no one (record! picks one by the sign of time - from)
     (aset sinks 0 r)
     (aset sinks 1 (sink nil))
     r)))

(defn record-from!
  "Records only requests started at or after epoch ms `from-ms` from now on (the end of a warm-up that
  starts once the users run)."
  [{:keys [^java.util.concurrent.atomic.AtomicLong from-ms]} ms]
  (.set from-ms (clamp-ms ms)))

(def ^:private ^java.util.function.BiFunction plus
  (reify java.util.function.BiFunction (apply [_ a b] (+ (long a) (long b)))))

(defn- bump! [^Map m k] (.merge m k 1 plus))

(defrecord Op [entity operation key])

(defn op
  "An entity x operation to record (`record!`), its key \"entity operation\" made once: define one per kind of
  request, not one per request."
  [entity operation]
  (->Op (str entity) (str operation) (str entity " " operation)))

(defn- record-into!
  "Records one request into the structures of `sink`."
  [{:keys [lock ^Map ops ^Map status ^Map errors minutes ^Recorder interval ^java.util.concurrent.atomic.AtomicLong interval-errors ^Writer log]}
   time-ms ^Op op code latency-us error-kind]
  (let [k (.-key op) entity (.-entity op) operation (.-operation op)
        ok? (and (<= 200 (long code)) (<= (long code) 299))]
    (when (or error-kind (not ok?)) (.incrementAndGet interval-errors))
    (if error-kind
      (locking lock (bump! errors [k error-kind]))
      (do (.recordValue interval (max 0 (long latency-us)))
          (agg/add! minutes time-ms entity operation latency-us)
          (locking lock
            (let [^Histogram h (or (.get ops k) (let [h (hist/histogram)] (.put ops k h) h))]
              (.recordValue h (max 0 (long latency-us))))
            (bump! status [k code])
            (when-not ok? (bump! errors [k "status"]))
            (when log (.write log (str (agg/format-log-line time-ms entity operation latency-us) "\n"))))))))

(defn record!
  "Records one request of `op` (made by `op`) started at epoch ms `time-ms`. `status` 0 with an `error-kind`
  (\"connect\", \"timeout\", ...) means no response; any status outside 200..299 counts as a status error (a
  DELETE's 204 is a success). Before the recorder's from-ms it goes, by the same code, where nobody reads it."
  [{:keys [^java.util.concurrent.atomic.AtomicLong from-ms ^objects sinks]} time-ms op code latency-us error-kind]
  ;; no branch on the warm-up: the sign bit of time - from (both clamped, no overflow) picks the sink
  (record-into! (aget sinks (unsigned-bit-shift-right (- (long time-ms) (.get from-ms)) 63))
                time-ms op code latency-us error-kind))

(defn close!
  "Flushes and closes the log, if any."
  [{:keys [^Writer log]}]
  (when log (.close log)))

(defn operations
  "Per entity x operation: latency summary (ms), statuses and errors by kind, keyed \"entity operation\"."
  [{:keys [lock ^Map ops ^Map status ^Map errors]}]
  (locking lock
    (let [ks (into (sorted-set) (concat (keys ops) (map first (keys errors))))]
      (into (sorted-map)
            (for [k ks]
              [k {:latency (if-let [h (.get ops k)] (hist/summary h) {:count 0})
                  :status (into (sorted-map) (for [[[k2 code] n] status :when (= k k2)] [code n]))
                  :errors (into (sorted-map) (for [[[k2 kind] n] errors :when (= k k2)] [(keyword kind) n]))}])))))

(defn total-histogram
  "Every answered request's latency in one histogram."
  ^Histogram [{:keys [lock ^Map ops]}]
  (locking lock (hist/merge-histograms (vals ops))))

(defn status-counts
  "Responses by status code over all operations."
  [{:keys [lock ^Map status]}]
  (locking lock
    (reduce (fn [m [[_ code] n]] (update m code (fnil + 0) n)) (sorted-map) status)))

(defn error-counts
  "Errors by kind over all operations."
  [{:keys [lock ^Map errors]}]
  (locking lock
    (reduce (fn [m [[_ kind] n]] (update m (keyword kind) (fnil + 0) n))
            {:connect 0 :read 0 :write 0 :timeout 0 :parse 0 :status 0} errors)))
