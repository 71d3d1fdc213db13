(ns herald.feed.perf
  "Per-minute performance figures: the `Recorder` role (every request's entity, operation, duration and status in; per-minute and since-start HdrHistograms out) and the views /perf, /perf/log and /metrics render. Its one implementation is `herald.feed.jobs.perf/flow-recorder`, the per-minute herald.flow job (in-process, or cluster-wide on Kafka Streams)."
  (:require [clojure.string :as str])
  (:import (java.time Instant ZoneOffset ZonedDateTime)
           (org.HdrHistogram AbstractHistogram HistogramIterationValue)))

(set! *warn-on-reflection* true)

;; A cell is the figures of one entity x operation over some time: {:histogram h :errors n} where h is an
;; HdrHistogram of durations in microseconds (3 significant digits) that nobody modifies any more, and
;; :errors counts statuses >= 400. Minutes are epoch minutes (epoch millis / 60000). With several instances
;; (:events {:type :kafka}) the views show the cluster's figures: every instance's requests.

(defprotocol Recorder
  "Records requests and serves their per-minute figures. Guarantees: `-record!` never blocks and never throws
  (an implementation that sheds load under overload counts the records it dropped in `-recorder-stats`); the
  views (`-minutes`, `-totals`, `-status-counts`) reflect every request recorded before the call and not
  dropped, after a bounded wait (`-await`); the cells they return are never modified afterwards."
  (-record! [r entity op nanos status start-ms] "Records one request (see `record!`).")
  (-now-ms [r] "The recorder's clock, epoch millis.")
  (-minutes [r from-minute to-minute] "Seq of [minute {[entity op] cell}], oldest first, minutes in [from, to] (inclusive).")
  (-closed? [r minute] "True once `minute`'s figures are final.")
  (-totals [r] "{[entity op] cell} since the recorder started.")
  (-status-counts [r] "{[entity op status] count} since the recorder started.")
  (-await [r timeout-ms] "Blocks until the views reflect every request recorded before the call; true if in time.")
  (-recorder-stats [r] "Counters of the recorder itself: {:recorded n :dropped n :late n ...}.")
  (-close-recorder! [r timeout-ms] "Stops recording; finishes what was recorded within `timeout-ms`; idempotent."))

;; ---------------------------------------------------------------------------------------------------
;; the public API over any Recorder

(defn record!
  "Records one request in `r`: `entity` and `op` keywords (e.g. :outbound :post), its duration in
  nanoseconds, its HTTP status, and `start-ms` (epoch millis when it started; defaults to now)."
  ([r entity op nanos status] (-record! r entity op nanos status (-now-ms r)))
  ([r entity op nanos status start-ms] (-record! r entity op nanos status start-ms)))

(defn await-recorded
  "Blocks until every request recorded in `r` so far shows in its figures; true if within `timeout-ms`."
  [r timeout-ms]
  (-await r timeout-ms))

(defn recorder-stats
  "The recorder's own counters: {:recorded n :dropped n :late n} (dropped: shed under overload; late: came
  after their minute was final)."
  [r]
  (-recorder-stats r))

(defn close-recorder!
  "Stops `r`, finishing (and, where it stores them, storing) the figures of what was recorded; idempotent."
  [r timeout-ms]
  (-close-recorder! r timeout-ms))

(defn- ms [micros] (/ (double micros) 1000.0))

(defn summarize
  "Count, median, p95, p99, max (milliseconds) and errors of a cell {:histogram :errors}."
  [{:keys [^AbstractHistogram histogram errors]}]
  {:count (.getTotalCount histogram)
   :median_ms (ms (.getValueAtPercentile histogram 50.0))
   :p95_ms (ms (.getValueAtPercentile histogram 95.0))
   :p99_ms (ms (.getValueAtPercentile histogram 99.0))
   :max_ms (ms (.getMaxValue histogram))
   :errors (long errors)})

(defn minute->iso
  "Formats an epoch minute as an ISO-8601 UTC instant, e.g. 2026-11-22T13:05:00Z."
  [^long minute]
  (str (Instant/ofEpochSecond (* minute 60))))

(defn- minute-range [r from-ms to-ms]
  (let [lo (if from-ms (quot (long from-ms) 60000) Long/MIN_VALUE)
        hi (if to-ms (quot (long to-ms) 60000) Long/MAX_VALUE)]
    (if (> lo hi) [] (-minutes r lo hi))))

(defn- by-name [cells] (sort-by (comp vec (partial map name) key) cells))

(defn figures
  "Per-minute figures between `from-ms` and `to-ms` (epoch millis, inclusive minutes; nil = open),
  oldest first, then by entity and operation. Each is {:minute iso :entity :operation :count
  :median_ms :p95_ms :p99_ms :max_ms :errors :closed bool}; a minute is closed once its figures are final."
  [r from-ms to-ms]
  (let [minutes (minute-range r from-ms to-ms)]
    (for [[minute cells] minutes
          :let [closed (-closed? r minute)]
          [[entity op] cell] (by-name cells)]
      (merge {:minute (minute->iso minute) :entity (name entity) :operation (name op)}
             (summarize cell)
             {:closed closed}))))

(defn totals
  "Since-start summaries per [entity op]: a map [entity op] -> (summarize cell) plus :histogram, the
  cumulative HdrHistogram in microseconds."
  [r]
  (into (sorted-map-by #(compare (mapv name %1) (mapv name %2)))
        (map (fn [[k cell]] [k (assoc (summarize cell) :histogram (:histogram cell))]))
        (-totals r)))

(defn status-counts
  "Request counts since start: a map [entity op status] -> count."
  [r]
  (-status-counts r))

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
  (let [minutes (minute-range r from-ms to-ms)]
    (for [[minute cells] minutes
          :let [prefix (log-prefix minute)]
          [[entity op] cell] (by-name cells)
          :let [head (str prefix (name entity) "|" (name op) "|")]
          [micros n] (recorded-values (:histogram cell))
          :let [line (str head (Math/round (/ (double micros) 1000.0)))]
          line (repeat n line)]
      line)))

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

;; ---------------------------------------------------------------------------------------------------
;; the dashboard's reads (herald.feed.dashboard)

(defprotocol Sources
  "Optional role of a Recorder whose figures may hold several instances' requests (`:events {:type :kafka}`):
  which instances contributed to each minute."
  (-source-id [r] "This instance's name in the figures, or nil.")
  (-minute-sources [r from-minute to-minute] "{minute #{instance-name}} of the minutes in [from, to] that name theirs."))

(defn minute-cells
  "The cells of the minutes in [`from-minute`, `to-minute`] (epoch minutes, inclusive): a seq of [minute
  {[entity op] cell}], oldest first, after the recorder's bounded wait for the requests recorded before the
  call. A cell is {:histogram h :errors n}, plus :statuses {status count} and :final? where the recorder keeps
  them (herald.feed.jobs.perf/flow-recorder does)."
  [r from-minute to-minute]
  (-minutes r from-minute to-minute))

(defn closed-minute?
  "True once `minute`'s figures in `r` are final."
  [r minute]
  (-closed? r minute))

(defn source-id
  "This instance's name in the figures of `r` (cluster-wide figures), or nil (only this instance's requests)."
  [r]
  (when (satisfies? Sources r) (-source-id r)))

(defn minute-sources
  "{minute #{instance-name}}: the instances whose requests are in each minute in [`from-minute`, `to-minute`],
  for recorders that know (cluster-wide figures); nil otherwise."
  [r from-minute to-minute]
  (when (satisfies? Sources r) (-minute-sources r from-minute to-minute)))
