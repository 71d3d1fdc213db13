(ns herald.feed.perf
  "Per-minute performance figures: every request's (entity, operation, duration, status) aggregated per minute and per entity x operation into count, median, p95, p99 and max with HdrHistogram."
  (:require [clojure.string :as str])
  (:import (java.time Instant ZoneOffset ZonedDateTime)
           (java.util.concurrent ConcurrentHashMap ConcurrentSkipListMap)
           (java.util.concurrent.atomic LongAdder)
           (java.util.function Function)
           (org.HdrHistogram AbstractHistogram ConcurrentHistogram Histogram HistogramIterationValue)))

(set! *warn-on-reflection* true)

(def ^:private significant-digits 3)

(deftype Cell [^ConcurrentHistogram histogram ^LongAdder errors])

(defn- new-cell [] (Cell. (ConcurrentHistogram. (int significant-digits)) (LongAdder.)))

(def ^:private cell-fn (reify Function (apply [_ _] (new-cell))))
(def ^:private minute-fn (reify Function (apply [_ _] (ConcurrentHashMap.))))
(def ^:private adder-fn (reify Function (apply [_ _] (LongAdder.))))

(defn recorder
  "Creates a per-minute performance recorder.

  | key                  | type | default                    | meaning |
  |----------------------|------|----------------------------|---------|
  | `:retention-minutes` | long | 1440                       | closed minutes older than this are dropped |
  | `:clock`             | fn   | `System/currentTimeMillis` | () -> epoch millis (tests pass their own) |"
  ([] (recorder {}))
  ([{:keys [retention-minutes clock] :or {retention-minutes 1440}}]
   (when-not (and (integer? retention-minutes) (pos? retention-minutes))
     (throw (ex-info (str ":retention-minutes must be a positive integer, got " (pr-str retention-minutes))
                     {:type :herald.feed/config :key :retention-minutes :value retention-minutes})))
   {:minutes (ConcurrentSkipListMap.)      ; epoch minute -> ConcurrentHashMap [entity op] -> Cell
    :totals (ConcurrentHashMap.)           ; [entity op] -> Cell, since start (for /metrics)
    :statuses (ConcurrentHashMap.)         ; [entity op status] -> LongAdder
    :retention (long retention-minutes)
    :clock (or clock #(System/currentTimeMillis))}))

(defn- prune! [{:keys [^ConcurrentSkipListMap minutes retention]} ^long minute]
  (let [oldest (- minute (long retention))]
    (while (when-let [k (.firstKey minutes)] (< (long k) oldest))
      (.pollFirstEntry minutes))))

(defn- minute-map ^ConcurrentHashMap [{:keys [^ConcurrentSkipListMap minutes] :as r} ^long minute]
  (or (.get minutes minute)
      (let [m (.computeIfAbsent minutes minute minute-fn)]
        (prune! r minute)
        m)))

(defn record!
  "Records one request: `entity` and `op` keywords (e.g. :outbound :post), its duration in
  nanoseconds, its HTTP status, and `start-ms` (epoch millis when it started; defaults to now)."
  ([r entity op nanos status] (record! r entity op nanos status ((:clock r))))
  ([r entity op nanos status start-ms]
   (let [k [entity op]
         status (long status)
         micros (max 0 (quot (long nanos) 1000))
         ^ConcurrentHashMap cells (minute-map r (quot (long start-ms) 60000))
         ^Cell cell (.computeIfAbsent cells k cell-fn)
         ^Cell total (.computeIfAbsent ^ConcurrentHashMap (:totals r) k cell-fn)]
     (.recordValue ^ConcurrentHistogram (.histogram cell) micros)
     (.recordValue ^ConcurrentHistogram (.histogram total) micros)
     (when (>= status 400)
       (.increment ^LongAdder (.errors cell))
       (.increment ^LongAdder (.errors total)))
     (.increment ^LongAdder (.computeIfAbsent ^ConcurrentHashMap (:statuses r) [entity op status] adder-fn)))))

(defn- ms [micros] (/ (double micros) 1000.0))

(defn summarize
  "Count, median, p95, p99, max (milliseconds) and errors of one HdrHistogram cell."
  [^Cell cell]
  (let [^Histogram h (.copy ^ConcurrentHistogram (.histogram cell))]
    {:count (.getTotalCount h)
     :median_ms (ms (.getValueAtPercentile h 50.0))
     :p95_ms (ms (.getValueAtPercentile h 95.0))
     :p99_ms (ms (.getValueAtPercentile h 99.0))
     :max_ms (ms (.getMaxValue h))
     :errors (.sum ^LongAdder (.errors cell))}))

(defn minute->iso
  "Formats an epoch minute as an ISO-8601 UTC instant, e.g. 2026-11-22T13:05:00Z."
  [^long minute]
  (str (Instant/ofEpochSecond (* minute 60))))

(defn- minute-range [{:keys [^ConcurrentSkipListMap minutes]} from-ms to-ms]
  (let [lo (if from-ms (quot (long from-ms) 60000) Long/MIN_VALUE)
        hi (if to-ms (quot (long to-ms) 60000) Long/MAX_VALUE)]
    (if (> lo hi)
      {}
      (.subMap minutes (Long/valueOf lo) true (Long/valueOf hi) true))))

(defn figures
  "Per-minute figures between `from-ms` and `to-ms` (epoch millis, inclusive minutes; nil = open),
  oldest first, then by entity and operation. Each is {:minute iso :entity :operation :count
  :median_ms :p95_ms :p99_ms :max_ms :errors :closed bool}; the current minute is not closed."
  [r from-ms to-ms]
  (let [now-minute (quot (long ((:clock r))) 60000)]
    (for [[minute ^ConcurrentHashMap cells] (minute-range r from-ms to-ms)
          [[entity op] cell] (sort-by (comp vec (partial map name) key) cells)]
      (merge {:minute (minute->iso minute) :entity (name entity) :operation (name op)}
             (summarize cell)
             {:closed (< (long minute) now-minute)}))))

(defn totals
  "Since-start summaries per [entity op]: a map [entity op] -> (summarize cell) plus :histogram,
  a copy of the cumulative HdrHistogram in microseconds."
  [r]
  (into (sorted-map-by #(compare (mapv name %1) (mapv name %2)))
        (map (fn [[k ^Cell cell]]
               [k (assoc (summarize cell) :histogram (.copy ^ConcurrentHistogram (.histogram cell)))]))
        (:totals r)))

(defn status-counts
  "Request counts since start: a map [entity op status] -> count."
  [r]
  (into {} (map (fn [[k ^LongAdder n]] [k (.sum n)])) (:statuses r)))

(defn- log-prefix [^long minute]
  (let [t (ZonedDateTime/ofInstant (Instant/ofEpochSecond (* minute 60)) ZoneOffset/UTC)]
    ;; the reference format has a zero-based month (java.util.Calendar's)
    (str (.getYear t) "|" (dec (.getMonthValue t)) "|" (.getDayOfMonth t) "|"
         (.getHour t) "|" (.getMinute t) "|")))

(defn- recorded-values
  "The [value count] pairs of a histogram's recorded values, read eagerly: HdrHistogram's iterator
  hands out one mutable HistogramIterationValue, so a lazy (chunked) seq over it would read later steps."
  [^AbstractHistogram h]
  (let [it (.iterator (.recordedValues h))]
    (loop [acc (transient [])]
      (if (.hasNext it)
        (let [^HistogramIterationValue v (.next it)]
          (recur (conj! acc [(.getValueIteratedTo v) (.getCountAddedInThisIterationStep v)])))
        (persistent! acc)))))

(defn log-lines
  "The performance log of the minutes between `from-ms` and `to-ms` in the reference line format
  YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms (UTC, month zero-based): one line per recorded
  request, its duration as whole milliseconds taken from the minute's histogram (3 significant
  digits), so a batch job over these lines computes the same per-minute figures. A lazy seq."
  [r from-ms to-ms]
  (for [[minute ^ConcurrentHashMap cells] (minute-range r from-ms to-ms)
        :let [prefix (log-prefix minute)]
        [[entity op] ^Cell cell] (sort-by (comp vec (partial map name) key) cells)
        :let [head (str prefix (name entity) "|" (name op) "|")]
        [micros n] (recorded-values (.copy ^ConcurrentHistogram (.histogram cell)))
        :let [line (str head (Math/round (/ (double micros) 1000.0)))]
        line (repeat n line)]
    line))

(defn parse-time
  "Parses a /perf time bound: epoch millis, an ISO-8601 instant (2026-11-22T13:05:00Z), a UTC
  local date-time (2026-11-22T13:05) or a date (2026-11-22), which means the start of that day (UTC)
  for `from` and its last millisecond for `to`. Returns epoch millis or nil for blank; throws
  ex-info {:type :herald.feed/bad-request} naming the value otherwise."
  [^String s field]
  (when-not (str/blank? s)
    (try
      (cond (re-matches #"-?\d+" s) (Long/parseLong s)
            (re-matches #"\d{4}-\d{2}-\d{2}" s)
            (let [day (java.time.LocalDate/parse s)]
              (if (= "to" field)
                (dec (* 1000 (.toEpochSecond (.atStartOfDay (.plusDays day 1) ZoneOffset/UTC))))
                (* 1000 (.toEpochSecond (.atStartOfDay day ZoneOffset/UTC)))))
            (re-find #"(Z|[+-]\d{2}:?\d{2})$" s) (.toEpochMilli (Instant/parse s))
            :else (.toEpochMilli (.toInstant (.atOffset (java.time.LocalDateTime/parse s) ZoneOffset/UTC))))
      (catch Exception e
        (throw (ex-info (str "'" field "' is not a time (epoch millis or ISO-8601): " s)
                        {:type :herald.feed/bad-request :field field :value s} e))))))
