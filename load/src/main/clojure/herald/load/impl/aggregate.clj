(ns herald.load.impl.aggregate
  "Per-minute, per entity x operation aggregates (count, median, p95, p99, max) as the reference
  performance pipeline reported them, and the reference log line format YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms
  (month zero-based, UTC) as input and output."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.load.impl.histogram :as hist])
  (:import (java.time Instant LocalDateTime ZoneOffset)
           (java.util HashMap Map)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn minute-of
  "The start of the UTC minute holding epoch millisecond `ms`."
  ^long [ms]
  (* 60000 (Math/floorDiv (long ms) 60000)))

(defn minute-label
  "A minute start (epoch ms) as yyyy-MM-ddTHH:mmZ."
  [minute-ms]
  (let [t (LocalDateTime/ofInstant (Instant/ofEpochMilli minute-ms) ZoneOffset/UTC)]
    (format "%04d-%02d-%02dT%02d:%02dZ" (.getYear t) (.getMonthValue t) (.getDayOfMonth t) (.getHour t) (.getMinute t))))

(defn aggregator
  "A new, thread-safe per-minute aggregator (fill with `add!` or `add-histogram!`, read with `rows`)."
  []
  (HashMap.))

(defn add!
  "Records one request: at epoch ms `time-ms`, `entity` x `operation`, taking `latency-us` microseconds."
  [^Map agg time-ms entity operation latency-us]
  (let [k [(minute-of time-ms) (str entity) (str operation)]]
    (locking agg
      (let [^Histogram h (or (.get agg k) (let [h (hist/histogram)] (.put agg k h) h))]
        (.recordValue h (max 0 (long latency-us)))))))

(defn add-histogram!
  "Adds a whole histogram (microseconds) to the minute holding epoch ms `time-ms`."
  [^Map agg time-ms entity operation ^Histogram h]
  (let [k [(minute-of time-ms) (str entity) (str operation)]]
    (locking agg
      (let [^Histogram into (or (.get agg k) (let [n (hist/histogram)] (.put agg k n) n))]
        (.add into h)))))

(defn- low
  "The value at percentile `p` as the lowest value of its HdrHistogram bucket, in ms: whole-ms inputs (the
  reference log) come back whole below ~1 s, and the value stays within the histogram's 3-digit precision."
  [^Histogram h p]
  (hist/us->ms (.lowestEquivalentValue h (.getValueAtPercentile h (double p)))))

(defn rows
  "The aggregates sorted by minute, entity, operation: maps of :minute (label) :minute-ms :entity
  :operation :count and :median :p95 :p99 :max in milliseconds."
  [^Map agg]
  (let [entries (locking agg (mapv (fn [[k ^Histogram h]] [k (.copy h)]) agg))]
    (->> entries
         (sort-by first)
         (mapv (fn [[[minute entity operation] ^Histogram h]]
                 {:minute (minute-label minute) :minute-ms minute :entity entity :operation operation
                  :count (.getTotalCount h)
                  :median (low h 50) :p95 (low h 95) :p99 (low h 99) :max (low h 100)})))))

(defn aggregate
  "Aggregates records (maps of :time-ms :entity :operation :latency-us) into `rows`."
  [records]
  (let [agg (aggregator)]
    (doseq [{:keys [time-ms entity operation latency-us]} records] (add! agg time-ms entity operation latency-us))
    (rows agg)))

(defn format-log-line
  "The reference performance log line for one request (latency truncated to whole ms, month zero-based)."
  [time-ms entity operation latency-us]
  (let [t (LocalDateTime/ofInstant (Instant/ofEpochMilli time-ms) ZoneOffset/UTC)]
    (str (.getYear t) "|" (dec (.getMonthValue t)) "|" (.getDayOfMonth t) "|" (.getHour t) "|" (.getMinute t)
         "|" entity "|" operation "|" (quot (long latency-us) 1000))))

(defn parse-log-line
  "Parses a reference log line into {:time-ms :entity :operation :latency-us}; nil for a blank line."
  [^String line]
  (when-not (str/blank? line)
    (let [f (str/split (str/trim line) #"\|")]
      (when (not= 8 (count f))
        (throw (ex-info (str "not a YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms line: " (pr-str line))
                        {:type :herald.load/bad-log-line :line line})))
      (try
        (let [[y mo d h mi entity operation ms] f
              t (LocalDateTime/of (int (parse-long y)) (int (inc (parse-long mo))) (int (parse-long d)) (int (parse-long h)) (int (parse-long mi)))]
          {:time-ms (.toEpochMilli (.toInstant t ZoneOffset/UTC)) :entity entity :operation operation
           :latency-us (* 1000 (long (parse-long ms)))})
        (catch Exception e
          (throw (ex-info (str "bad field in log line: " (pr-str line)) {:type :herald.load/bad-log-line :line line} e)))))))

(defn aggregate-log
  "Aggregates the reference log lines read from `source` (anything clojure.java.io/reader takes)."
  [source]
  (let [agg (aggregator)]
    (with-open [r (io/reader source)]
      (doseq [line (line-seq r)]
        (when-let [{:keys [time-ms entity operation latency-us]} (parse-log-line line)]
          (add! agg time-ms entity operation latency-us))))
    (rows agg)))

(def csv-header
  "The header line of per-minute CSV."
  "minute,entity,operation,count,median_ms,p95_ms,p99_ms,max_ms")

(defn rows->csv
  "The rows as CSV text with a header line."
  [rows]
  (str/join "\n" (cons csv-header
                       (for [{:keys [minute entity operation count median p95 p99 max]} rows]
                         (str/join "," [minute entity operation count median p95 p99 max])))))
