(ns herald.feed.jobs.perf
  "The per-minute performance job's parts (the latency aggregation, the trigger emits), the view of minute rows that /perf, /perf/log and /metrics read, and `flow-recorder`, the `herald.feed.perf/Recorder` over the job: in-process (`herald.feed.jobs.perf-local`) or cluster-wide on Kafka Streams (`herald.feed.jobs.perf-kafka`)."
  (:require [herald.feed.jobs :as jobs]
            [herald.feed.jobs.minutes :as minutes]
            [herald.feed.perf :as perf])
  (:import (java.util HashMap)
           (java.util.concurrent ConcurrentHashMap ConcurrentSkipListMap)
           (java.util.concurrent.atomic AtomicLong)
           (java.util.function BiFunction Function Predicate)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------------------------------------------
;; the job's fns (named by keyword in herald.feed.jobs/perf-job)

(def ^:private sum-fn (reify BiFunction (apply [_ a b] (+ (long a) (long b)))))
(def ^:private max-fn (reify BiFunction (apply [_ a b] (max (long a) (long b)))))

(def latency
  "A window aggregation (herald.flow's contract): an HdrHistogram (3 significant digits) of durations and a
  count per status. A segment is one request `{:us :status}` or a batch of an instance's requests
  `{:histogram h :statuses {status n} :src id :seq n}` (h a Histogram or its `minutes/encode-histogram`
  text, as batches cross Kafka topics as plain data), merged in (HdrHistograms add exactly); the
  highest `:seq` merged per `:src` is kept, so an instance can tell when its batches show. Its value is a
  copy: `{:histogram Histogram :statuses {status n}}` plus `:sources {src seq}` when batches came.
  (herald.flow's built-in `:herald.flow/percentiles` extracts quantiles only; /perf/log and the merge of
  minutes need the whole histogram.)"
  {:aggregation/init (fn [_] {:histogram (Histogram. 3) :statuses (HashMap.) :sources (HashMap.)})
   :aggregation/create-state-update (fn [_ _ seg] seg)
   :aggregation/apply-state-update
   (fn [_ {:keys [^Histogram histogram ^HashMap statuses ^HashMap sources] :as state} seg]
     (if-let [h (:histogram seg)]
       (do (.add histogram (if (string? h) (minutes/decode-histogram h) ^Histogram h))
           (doseq [[s n] (:statuses seg)] (.merge statuses s n sum-fn))
           (when-let [src (:src seg)] (.merge sources src (long (:seq seg 0)) max-fn)))
       (do (.recordValue histogram (max 0 (long (:us seg))))
           (.merge statuses (:status seg) 1 sum-fn)))
     state)
   :aggregation/extract
   (fn [_ {:keys [^Histogram histogram ^HashMap statuses ^HashMap sources]}]
     (cond-> {:histogram (.copy histogram) :statuses (into {} statuses)}
       (and sources (not (.isEmpty sources))) (assoc :sources (into {} sources))))})

(defn- row [{:keys [group lower value]} final?]
  (let [[entity operation] group]
    (cond-> {:entity entity :operation operation :minute (quot (long lower) 60000)
             :histogram (:histogram value) :statuses (:statuses value) :final? final?}
      (:sources value) (assoc :sources (:sources value)))))

(defn open-minute
  "Trigger emit of the timer: the figures so far of a minute still open (nil for other events: the
  closing row comes from `closed-minute`)."
  [fired]
  (when (= :timer (:event fired)) (row fired false)))

(defn closed-minute
  "Trigger emit of the watermark (and job completion): the final figures of a minute."
  [fired]
  (row fired true))

;; ---------------------------------------------------------------------------------------------------
;; values: {:histogram Histogram :statuses {status n}}, never modified once built

(defn total-count
  "The number of requests in value `v`."
  ^long [v]
  (.getTotalCount ^Histogram (:histogram v)))

(defn add-values
  "The sum of values `a` (or nil) and `b`, a new value."
  [a b]
  (if a
    {:histogram (doto (.copy ^Histogram (:histogram a)) (.add ^Histogram (:histogram b)))
     :statuses (merge-with + (:statuses a) (:statuses b))}
    b))

(defn- errors [statuses] (reduce-kv (fn [n s c] (if (>= (long s) 400) (+ (long n) (long c)) n)) 0 statuses))

(defn- cell [v final?] (assoc v :errors (errors (:statuses v)) :final? final?))

;; ---------------------------------------------------------------------------------------------------
;; the view: the newest row of each [minute entity operation], over `base` (stored minutes of earlier runs)

(def ^:private minute-fn (reify Function (apply [_ _] (ConcurrentHashMap.))))

(defn view
  "An empty view keeping `retention` minutes before the newest one. Written by one thread, read by any."
  [retention]
  {:view (ConcurrentSkipListMap.)   ; minute -> ConcurrentHashMap [entity op] -> cell
   :base (ConcurrentHashMap.)       ; [minute entity op] -> value of earlier runs (restored from disk)
   :open (ConcurrentHashMap.)       ; [minute entity op] -> newest value, not final yet
   :sources (ConcurrentHashMap.)    ; [minute entity op] -> {src seq} of the newest row
   :closed-totals (atom {})         ; [entity op] -> sum of final (or pruned) values
   :newest (AtomicLong. Long/MIN_VALUE) :retention (long retention)})

(defn- older-than [^long oldest] (reify Predicate (test [_ k] (< (long (first k)) oldest))))

(defn- prune! [{:keys [^ConcurrentSkipListMap view ^ConcurrentHashMap base ^ConcurrentHashMap open
                       ^ConcurrentHashMap sources closed-totals retention]} ^long newest]
  (let [oldest (- newest (long retention))]
    (while (when-let [k (.firstKey view)] (< (long k) oldest)) (.pollFirstEntry view))
    (.removeIf (.keySet base) (older-than oldest))
    (.removeIf (.keySet sources) (older-than oldest))
    (doseq [[[m e op :as k] v] open :when (< (long m) oldest)]
      (.remove open k)
      (swap! closed-totals update [e op] add-values v))))

(defn upsert!
  "Puts row `r` ({:minute :entity :operation :histogram :statuses :final? [:sources]}) into view `st`,
  pruning what falls out of the retention. Returns how many requests the row added over the previous one."
  ^long [{:keys [^ConcurrentSkipListMap view ^ConcurrentHashMap base ^ConcurrentHashMap open
                 ^ConcurrentHashMap sources closed-totals ^AtomicLong newest] :as st}
         {:keys [entity operation minute final?] :as r}]
  (let [k [minute entity operation]
        v (select-keys r [:histogram :statuses])
        prev (.get open k)]
    (when (or (= Long/MIN_VALUE (.get newest)) (>= (long minute) (- (.get newest) (long (:retention st)))))
      (if final?
        (do (.remove open k) (swap! closed-totals update [entity operation] add-values v))
        (.put open k v))
      (when-let [s (:sources r)] (.put sources k s))
      (.put ^ConcurrentHashMap (.computeIfAbsent view minute minute-fn) [entity operation]
            (cell (add-values (.get base k) v) final?))
      (when (> (long minute) (.get newest)) (.set newest minute) (prune! st minute)))
    (- (total-count v) (if prev (total-count prev) 0))))

(defn add-base!
  "Adds a stored value of an earlier run to minute key `k` [minute entity operation] of view `st` (shown,
  not final: a minute still within its lateness may take more requests in this run)."
  [{:keys [^ConcurrentSkipListMap view ^ConcurrentHashMap base ^AtomicLong newest]} [minute entity operation :as k] v]
  (let [sum (add-values (.get base k) v)]
    (.put base k sum)
    (.put ^ConcurrentHashMap (.computeIfAbsent view minute minute-fn) [entity operation] (cell sum false))
    (when (> (long minute) (.get newest)) (.set newest minute))))

(defn row-of
  "The cell of minute key [minute entity operation] in view `st`, or nil."
  [{:keys [^ConcurrentSkipListMap view]} [minute entity operation]]
  (some-> ^ConcurrentHashMap (.get view minute) (.get [entity operation])))

(defn sources-of
  "{src seq} of the newest row of minute key `k` in view `st`, or nil."
  [{:keys [^ConcurrentHashMap sources]} k]
  (.get sources k))

(defn- totals [{:keys [closed-totals ^ConcurrentHashMap open]}]
  (reduce (fn [acc [[_ e op] v]] (update acc [e op] add-values v)) @closed-totals open))

;; ---------------------------------------------------------------------------------------------------
;; the recorder over a view and a runtime

(defn recorder
  "The `herald.feed.perf/Recorder` over view `st` and runtime `rt`, a map of fns: `:record!` (entity op us
  status at), `:await` (timeout-ms -> bool: the view reflects what was recorded before), `:stats` (-> map)
  and `:close!` (timeout-ms -> bool), and `:src`, this instance's name in batches (cluster-wide runtimes; also
  `herald.feed.perf/Sources`). `opts`: `:clock`, `:allowed-lateness-ms`, `:sync-wait-ms`."
  [st {:keys [record! await stats close! src]} {:keys [clock allowed-lateness-ms sync-wait-ms]}]
  (reify
    perf/Sources
    (-source-id [_] src)
    (-minute-sources [_ lo hi]
      (reduce (fn [acc [[m] srcs]]
                (if (<= (long lo) (long m) (long hi)) (update acc m (fnil into (sorted-set)) (keys srcs)) acc))
              (sorted-map) (:sources st)))
    perf/Recorder
    (-record! [_ entity op nanos status start-ms]
      (record! entity op (quot (long nanos) 1000) status start-ms))
    (-now-ms [_] (long (clock)))
    (-minutes [_ lo hi]
      (await sync-wait-ms)
      (for [[minute ^ConcurrentHashMap cells] (.subMap ^ConcurrentSkipListMap (:view st) (Long/valueOf (long lo)) true
                                                       (Long/valueOf (long hi)) true)]
        [minute (into {} cells)]))
    (-closed? [_ minute]
      (or (<= (+ (* (inc (long minute)) 60000) (long allowed-lateness-ms)) (long (clock)))
          (every? :final? (vals (.get ^ConcurrentSkipListMap (:view st) minute)))))
    (-totals [_]
      (await sync-wait-ms)
      (into {} (map (fn [[k v]] [k (cell v false)])) (totals st)))
    (-status-counts [_]
      (await sync-wait-ms)
      (into {} (for [[[e op] v] (totals st) [status n] (:statuses v)] [[e op status] n])))
    (-await [_ timeout-ms] (await timeout-ms))
    (-recorder-stats [_] (stats))
    (-close-recorder! [_ timeout-ms] (close! timeout-ms))))

;; ---------------------------------------------------------------------------------------------------
;; options and the constructor

(def ^:private option-spec
  {:retention-minutes [jobs/pos-long? "a positive integer"]
   :publish-ms [jobs/pos-long? "a positive integer (milliseconds)"]
   :allowed-lateness-ms [jobs/nat-long? "a non-negative integer (milliseconds)"]
   :queue-size [jobs/pos-long? "a positive integer"]
   :batch-size [jobs/pos-long? "a positive integer"]
   :sync-wait-ms [jobs/nat-long? "a non-negative integer (milliseconds)"]
   :send-ms [jobs/pos-long? "a positive integer (milliseconds)"]
   :dir [#(or (nil? %) (string? %)) "a directory path string or nil"]
   :data-dir [#(or (nil? %) (string? %)) "a directory path string or nil"]
   :events [#(or (nil? %) (and (map? %) (#{:local :kafka} (:type %)))) "{:type :local} or {:type :kafka ...}"]
   :clock [fn? "a fn of no argument returning epoch millis"]})

(def defaults
  "The recorder's default options (see `flow-recorder`)."
  {:retention-minutes 1440 :publish-ms 200 :allowed-lateness-ms 30000 :queue-size 100000 :batch-size 1024
   :sync-wait-ms 2000 :send-ms 1000})

(def kafka-defaults
  "The defaults that differ with `:events {:type :kafka}`: a request reaches the figures through two Kafka
  Streams commits (one a second), so a view may wait longer for it."
  {:sync-wait-ms 5000})

(defn flow-recorder
  "A `herald.feed.perf/Recorder` over the per-minute job (`herald.feed.jobs/perf-job`): each minute's
  HdrHistogram per entity x operation, its open figures published every `:publish-ms`, its final ones once
  when it closes. `record!` is one lock-free enqueue (a full queue drops the record and counts it). A view
  (/perf, /metrics) first waits up to `:sync-wait-ms` for the figures to take in every request recorded
  before it. Where the job runs is `:events`:
  - `{:type :local}` (or nil): in-process, closed minutes stored under `:dir` and read back at start (see
    `herald.feed.jobs.perf-local/local-recorder`); a crash loses the minutes not closed yet;
  - `{:type :kafka :bootstrap-servers \"host:port\" ...}`: cluster-wide on Kafka Streams, every instance's
    requests in the same minutes, stored in a compacted topic every instance reads (see
    `herald.feed.jobs.perf-kafka/kafka-recorder`, which documents the `:events` keys it reads).

  | key                    | type   | default | meaning |
  |------------------------|--------|---------|---------|
  | `:retention-minutes`   | long   | 1440    | minutes kept (in memory, on disk, in Kafka) before the newest one |
  | `:publish-ms`          | long   | 200     | how often the open minutes' figures are published |
  | `:allowed-lateness-ms` | long   | 30000   | how long after a minute's end a request that started in it still counts |
  | `:queue-size`          | long   | 100000  | records waiting (for the job, or for the Kafka sender) before new ones are dropped |
  | `:batch-size`          | long   | 1024    | most records the job takes in one batch |
  | `:sync-wait-ms`        | long   | 2000 (`:kafka`: 5000) | longest a view waits for the figures to catch up |
  | `:send-ms`             | long   | 1000    | `:kafka`: how often an instance sends its batches (one HdrHistogram per minute x entity x operation) |
  | `:dir`                 | string | nil     | `:local`: where closed minutes are stored; nil keeps them in memory only |
  | `:data-dir`            | string | nil     | `:kafka`: the instance's local dir (Kafka Streams' state dir under it); nil: a temp dir |
  | `:events`              | map    | `{:type :local}` | the resolved top-level `:events` config |
  | `:clock`               | fn     | `System/currentTimeMillis` | () -> epoch millis |"
  ([] (flow-recorder {}))
  ([opts]
   (jobs/check-options! :perf option-spec opts)
   (let [kafka? (= :kafka (get-in opts [:events :type]))
         o (merge defaults (when kafka? kafka-defaults) {:clock #(System/currentTimeMillis)}
                  (into {} (remove (comp nil? val)) opts))]
     (if kafka?
       ((requiring-resolve 'herald.feed.jobs.perf-kafka/kafka-recorder) o)
       ((requiring-resolve 'herald.feed.jobs.perf-local/local-recorder) o)))))
