(ns herald.feed.jobs.perf
  "The per-minute performance job's parts (the latency aggregation, the trigger emits, the sink that keeps and stores the minutes) and `flow-recorder`, a `herald.feed.perf/Recorder` that hands each request to the job through a lock-free mailbox."
  (:require [herald.feed.jobs :as jobs]
            [herald.feed.jobs.mailbox :as mailbox]
            [herald.feed.jobs.minutes :as minutes]
            [herald.feed.perf :as perf]
            [herald.flow :as flow])
  (:import (java.util HashMap)
           (java.util.concurrent ConcurrentHashMap ConcurrentSkipListMap)
           (java.util.concurrent.atomic AtomicLong)
           (java.util.function BiFunction Function)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------------------------------------------
;; the job's fns (named by keyword in herald.feed.jobs/perf-job)

(def ^:private sum-fn (reify BiFunction (apply [_ a b] (+ (long a) (long b)))))

(def latency
  "A window aggregation (herald.flow's contract): an HdrHistogram (3 significant digits) of the segments'
  `:us` and a count per `:status`. Its value is a copy: `{:histogram Histogram :statuses {status n}}`.
  (herald.flow's built-in `:herald.flow/percentiles` extracts quantiles only; /perf/log and the merge of a
  minute across restarts need the whole histogram.)"
  {:aggregation/init (fn [_] {:histogram (Histogram. 3) :statuses (HashMap.)})
   :aggregation/create-state-update (fn [_ _ seg] seg)
   :aggregation/apply-state-update
   (fn [_ {:keys [^Histogram histogram ^HashMap statuses] :as state} seg]
     (.recordValue histogram (max 0 (long (:us seg))))
     (.merge statuses (:status seg) 1 sum-fn)
     state)
   :aggregation/extract
   (fn [_ {:keys [^Histogram histogram ^HashMap statuses]}]
     {:histogram (.copy histogram) :statuses (into {} statuses)})})

(defn- row [{:keys [group lower value]} final?]
  (let [[entity operation] group]
    {:entity entity :operation operation :minute (quot (long lower) 60000)
     :histogram (:histogram value) :statuses (:statuses value) :final? final?}))

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

(defn- total-count ^long [v] (.getTotalCount ^Histogram (:histogram v)))

(defn- add-values [a b]
  (if a
    {:histogram (doto (.copy ^Histogram (:histogram a)) (.add ^Histogram (:histogram b)))
     :statuses (merge-with + (:statuses a) (:statuses b))}
    b))

(defn- errors [statuses] (reduce-kv (fn [n s c] (if (>= (long s) 400) (+ (long n) (long c)) n)) 0 statuses))

(defn- cell [v final?] (assoc v :errors (errors (:statuses v)) :final? final?))

(def ^:private minute-fn (reify Function (apply [_ _] (ConcurrentHashMap.))))

;; ---------------------------------------------------------------------------------------------------
;; the sink: runs on the job's output thread

(defn- log [& xs] (binding [*out* *err*] (apply println "herald.feed.perf:" xs)))

(defn- prune-view! [{:keys [^ConcurrentSkipListMap view ^HashMap base ^ConcurrentHashMap open retention]} ^long newest]
  (let [oldest (- newest (long retention))]
    (while (when-let [k (.firstKey view)] (< (long k) oldest)) (.pollFirstEntry view))
    (.removeIf (.keySet base) (reify java.util.function.Predicate (test [_ k] (< (long (first k)) oldest))))
    (.removeIf (.keySet open) (reify java.util.function.Predicate (test [_ k] (< (long (first k)) oldest))))))

(defn- upsert!
  "Puts one row into the view; `reflected` moves last, so a reader that saw it sees the row."
  [{:keys [^ConcurrentSkipListMap view ^HashMap base ^ConcurrentHashMap open closed-totals ^AtomicLong reflected]}
   {:keys [entity operation minute final?] :as r}]
  (let [k [minute entity operation]
        v (select-keys r [:histogram :statuses])
        prev (.get open k)]
    (if final?
      (do (.remove open k) (swap! closed-totals update [entity operation] add-values v))
      (.put open k v))
    (.put ^ConcurrentHashMap (.computeIfAbsent view minute minute-fn) [entity operation]
          (cell (add-values (.get base k) v) final?))
    (.addAndGet reflected (- (total-count v) (if prev (total-count prev) 0)))))

(defn- sink
  "The `:sink/fn` of the job's output: upserts each row, stores the final ones, prunes old minutes."
  [{:keys [dir run ^AtomicLong newest ^AtomicLong store-errors] :as st}]
  (fn [rows]
    (doseq [r rows] (upsert! st r))
    (let [m (reduce max (.get newest) (map :minute rows))]
      (when (> (long m) (.get newest)) (.set newest m) (prune-view! st m)))
    (when-let [finals (and dir (seq (filter :final? rows)))]
      (try (minutes/append! dir (map #(assoc % :run run) finals))
           (catch Exception e
             (when (= 1 (.incrementAndGet store-errors))
               (log "storing closed minutes in" dir "failed (counted; first failure logged):" (str e))))))))

;; ---------------------------------------------------------------------------------------------------
;; start: the stored minutes of earlier runs

(defn- restore!
  "Loads the stored minutes from `oldest` on into `base` (summed over runs) and the view. They are not
  marked final: a minute still within its lateness may take more requests in this run."
  [{:keys [dir ^HashMap base ^ConcurrentSkipListMap view ^AtomicLong newest]} ^long oldest]
  (minutes/prune! dir oldest)
  (let [rows (minutes/load-rows dir oldest)]
    (doseq [{:keys [minute entity operation] :as r} rows
            :let [k [minute entity operation]]]
      (.put base k (add-values (.get base k) (select-keys r [:histogram :statuses]))))
    (doseq [[[minute entity operation :as k] v] base]
      (.put ^ConcurrentHashMap (.computeIfAbsent view minute minute-fn) [entity operation] (cell v false))
      (when (> (long minute) (.get newest)) (.set newest minute)))
    (when (pos? (long (:skipped (meta rows)))) (log "skipped" (:skipped (meta rows)) "unreadable stored minute lines in" dir))
    (count rows)))

;; ---------------------------------------------------------------------------------------------------
;; the recorder

(def ^:private option-spec
  {:retention-minutes [jobs/pos-long? "a positive integer"]
   :publish-ms [jobs/pos-long? "a positive integer (milliseconds)"]
   :allowed-lateness-ms [jobs/nat-long? "a non-negative integer (milliseconds)"]
   :queue-size [jobs/pos-long? "a positive integer"]
   :batch-size [jobs/pos-long? "a positive integer"]
   :sync-wait-ms [jobs/nat-long? "a non-negative integer (milliseconds)"]
   :dir [#(or (nil? %) (string? %)) "a directory path string or nil"]
   :clock [fn? "a fn of no argument returning epoch millis"]})

(def defaults
  "The recorder's default options (see `flow-recorder`)."
  {:retention-minutes 1440 :publish-ms 200 :allowed-lateness-ms 30000 :queue-size 100000 :batch-size 1024
   :sync-wait-ms 2000})

(defn- late ^long [job]
  (long (or (get-in (flow/job-metrics job) [:tasks :per-minute :late]) 0)))

(defn- await-view
  "Waits until every record accepted before the call is reflected in the view or was late. The late
  count comes from the job's metrics, which are costly to read (interval histograms): it is read again
  only when the view has not caught up for two publish periods."
  [{:keys [mb ^AtomicLong reflected ^AtomicLong late-seen publish-ms]} job ^long timeout-ms]
  (let [target (mailbox/accepted mb)
        start (System/currentTimeMillis)
        deadline (+ start timeout-ms)]
    (loop [checked start]
      (let [now (System/currentTimeMillis)]
        (cond (>= (+ (.get reflected) (.get late-seen)) target) true
              (or (>= now deadline) (some? (flow/await-job job 0))) false     ; timed out, or the job ended
              (>= (- now checked) (* 2 (long publish-ms))) (do (.set late-seen (late job)) (recur now))
              :else (do (Thread/sleep 2) (recur checked)))))))

(defn- totals [{:keys [closed-totals ^ConcurrentHashMap open]}]
  (reduce (fn [acc [[_ e op] v]] (update acc [e op] add-values v)) @closed-totals open))

(defn- recorder [{:keys [mb view lateness clock] :as st} job {:keys [sync-wait-ms]}]
  (reify perf/Recorder
    (-record! [_ entity op nanos status start-ms]
      (mailbox/offer! mb {:entity entity :operation op :us (quot (long nanos) 1000) :status status :at start-ms}))
    (-now-ms [_] (long (clock)))
    (-minutes [_ lo hi]
      (await-view st job sync-wait-ms)
      (for [[minute cells] (.subMap ^ConcurrentSkipListMap view (Long/valueOf (long lo)) true (Long/valueOf (long hi)) true)]
        [minute (into {} cells)]))
    (-closed? [_ minute]
      (or (<= (+ (* (inc (long minute)) 60000) (long lateness)) (long (clock)))
          (every? :final? (vals (.get ^ConcurrentSkipListMap view minute)))))
    (-totals [_]
      (await-view st job sync-wait-ms)
      (into {} (map (fn [[k v]] [k (cell v false)])) (totals st)))
    (-status-counts [_]
      (await-view st job sync-wait-ms)
      (into {} (for [[[e op] v] (totals st) [status n] (:statuses v)] [[e op status] n])))
    (-await [_ timeout-ms] (await-view st job timeout-ms))
    (-recorder-stats [_]
      {:recorded (mailbox/accepted mb) :dropped (mailbox/dropped mb)
       :late (let [n (late job)] (.set ^AtomicLong (:late-seen st) n) n)
       :queued (mailbox/queued mb) :store-errors (.get ^AtomicLong (:store-errors st))})
    (-close-recorder! [_ timeout-ms]
      (mailbox/close! mb)
      (let [done (flow/await-job job timeout-ms)]
        (when-not (= :completed (:status done))
          (log "the per-minute job did not finish in" timeout-ms "ms; its open minutes are lost")
          (flow/kill-job job))
        (= :completed (:status done))))))

(defn flow-recorder
  "A `herald.feed.perf/Recorder` over the per-minute job (`herald.feed.jobs/perf-job`). `record!` is one
  lock-free enqueue (a full mailbox drops the record and counts it); the job keeps each minute's
  HdrHistogram per entity x operation, publishes the open minutes every `:publish-ms` and the closed ones
  once, and stores closed minutes under `:dir` (read back at start, so /perf survives a restart). A view
  (/perf, /metrics) first waits up to `:sync-wait-ms` for the job to take in every request recorded before it.
  A crash loses the minutes not closed yet (at most the last minute plus `:allowed-lateness-ms`).

  | key                    | type   | default | meaning |
  |------------------------|--------|---------|---------|
  | `:retention-minutes`   | long   | 1440    | minutes kept (in memory and on disk) before the newest one |
  | `:publish-ms`          | long   | 200     | how often the open minutes' figures are published |
  | `:allowed-lateness-ms` | long   | 30000   | how long after a minute's end a request that started in it still counts |
  | `:queue-size`          | long   | 100000  | records waiting for the job before new ones are dropped |
  | `:batch-size`          | long   | 1024    | most records the job takes in one batch |
  | `:sync-wait-ms`        | long   | 2000    | longest a view waits for the job to catch up |
  | `:dir`                 | string | nil     | where closed minutes are stored; nil keeps them in memory only |
  | `:clock`               | fn     | `System/currentTimeMillis` | () -> epoch millis |"
  ([] (flow-recorder {}))
  ([opts]
   (jobs/check-options! :perf option-spec opts)
   (let [{:keys [dir retention-minutes allowed-lateness-ms queue-size clock] :as o}
         (merge defaults {:clock #(System/currentTimeMillis)} (into {} (remove (comp nil? val)) opts))
         st {:mb (mailbox/mailbox queue-size) :view (ConcurrentSkipListMap.) :base (HashMap.)
             :open (ConcurrentHashMap.) :closed-totals (atom {}) :reflected (AtomicLong.)
             :newest (AtomicLong. Long/MIN_VALUE) :store-errors (AtomicLong.) :late-seen (AtomicLong.)
             :publish-ms (:publish-ms o)
             :retention retention-minutes :lateness allowed-lateness-ms :clock clock
             :dir dir :run (str (java.util.UUID/randomUUID))}]
     (when dir
       (let [n (restore! st (- (quot (long (clock)) 60000) (long retention-minutes)))]
         (when (pos? n) (log "restored" n "stored minute rows from" dir))))
     (recorder st (jobs/watch! (flow/submit-job (jobs/perf-job o)
                                                {:inject {:requests {:mailbox/mailbox (:mb st)}
                                                          :minutes {:sink/fn (sink st)}}}))
               o))))
