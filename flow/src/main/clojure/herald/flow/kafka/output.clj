(ns herald.flow.kafka.output
  "A plugin output (a herald.flow.spi/Output) inside a Kafka Streams application: a processor that gathers segments into batches for `-write!`, and a state store whose pre-commit hook writes the pending batch and runs `-flush!` before the task's offsets commit."
  (:require [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.retry :as retry]
            [herald.flow.spi :as spi])
  (:import (java.time Duration)
           (java.util ArrayList Map)
           (java.util.concurrent ConcurrentHashMap)
           (org.apache.kafka.streams.processor PunctuationType Punctuator StateRestoreCallback StateStore StateStoreContext)
           (org.apache.kafka.streams.processor.api Processor ProcessorContext ProcessorSupplier)
           (org.apache.kafka.streams.state StoreBuilder)
           (org.apache.kafka.streams.state.internals CachedStateStore)))

(set! *warn-on-reflection* true)

;; Why a store: Kafka Streams has no public "before commit" callback for processors. Before it commits a
;; task (StreamTask.prepareCommit, on every commit interval, on revocation and on a clean close) it calls
;; flushCache() on every registered store implementing the internal CachedStateStore (stores with a
;; cache), then flushes its producer, and only then commits the offsets (or the transaction).
;; StateStore.flush() itself runs only after the commit, and not every time (when checkpointing). Verified
;; against Kafka 4.1.1 (StreamTask.flush -> ProcessorStateManager.flushCache); kafka_output_test checks that
;; committed offsets never pass what the output flushed.

(defprotocol ^:private Hook
  (-on-commit! [store f] "Makes `(f)` the store's pre-commit action."))

(defn store-name
  "The state store of the plugin output `task` fed by task `src` (one per stream task)."
  [safe-task safe-src]
  (str "herald." safe-task "." safe-src ".output"))

(defn- commit-hook-store ^StateStore [^String n]
  (let [f (volatile! nil) open (volatile! false)]
    (reify
      StateStore
      (name [_] n)
      (init [_ ctx root]
        (.register ^StateStoreContext ctx ^StateStore root (reify StateRestoreCallback (restore [_ _ _])))
        (vreset! open true)
        nil)
      (flush [_])
      (close [_] (vreset! open false))
      (persistent [_] false)
      (isOpen [_] @open)
      CachedStateStore
      (setFlushListener [_ _ _] false)
      (flushCache [_] (when-let [g @f] (g)))
      (clearCache [_])
      Hook
      (-on-commit! [_ g] (vreset! f g)))))

(defn store-builder
  "The builder of the (unlogged, in-memory, empty) store named `n` whose pre-commit hook the output's processor sets."
  ^StoreBuilder [^String n]
  (reify StoreBuilder
    (withCachingEnabled [this] this)
    (withCachingDisabled [this] this)
    (withLoggingEnabled [this _] this)
    (withLoggingDisabled [this] this)
    (build [_] (commit-hook-store n))
    (logConfig [_] {})
    (loggingEnabled [_] false)
    (name [_] n)))

(defn poll-budget-ms
  "Half the main consumer's max.poll.interval.ms (Kafka's default 300000): the longest one retry run (of an
  output's write, or of the job's `:on-error`) may block the stream thread before it hands its tasks back (past
  max.poll.interval.ms the member would be evicted)."
  ^long [^ProcessorContext ctx]
  (let [cfg (.appConfigs ctx)
        v (or (get cfg "main.consumer.max.poll.interval.ms") (get cfg "consumer.max.poll.interval.ms")
              (get cfg "max.poll.interval.ms") 300000)]
    (quot (Long/parseLong (str v)) 2)))

;; Why a batch per stream thread: a thread owns many stream tasks (one per input partition: 12 on a lone
;; instance of the feed), and a batch per task cut every store write into as many small requests (an
;; OpenSearch bulk or a Cassandra batch of a post or two each, bench/results/feed-scale.md). The tasks of one
;; thread therefore share one batch and one plugin: each task's segments are kept apart (so that a task
;; closing drops what is its own), and a write hands them all to the plugin in one `-write!`.

(defn- group
  "A new batch shared by the stream tasks of one stream thread: the plugin built with `task`, the pending
  segments per stream task (insertion order), and the write/commit fns."
  [{:keys [task job store ^Map retry-states resolve metrics on-error stop?]} ^ProcessorContext ctx]
  (let [plugin ((resolve (:task/plugin task)) task)
        pending (java.util.LinkedHashMap.)
        size (long-array 2)                 ; [segments pending, System/nanoTime of the oldest]
        policy (assoc (retry/policy task (:job/name job)) :stop? stop?)
        ;; one run of failures per batch, so per stream thread: one thread's failing batch does not charge another's
        ;; :output/give-up-after-ms (`adopt!` copies a replaced thread's run into the batches that take its tasks
        ;; over); the totals (failed attempts, segments handed on) are the output's, so they never go down
        totals (.computeIfAbsent retry-states [(:task/name task) store :totals]
                                 (reify java.util.function.Function
                                   (apply [_ _] (select-keys (retry/state) [:total :dead]))))
        st (merge (retry/state) totals)
        live-key [(:task/name task) store :thread (.getName (Thread/currentThread))]
        _ (.put retry-states live-key st)
        budget (poll-budget-ms ctx)
        part (metrics/part (get metrics (:task/name task)))
        ;; a segment the plugin rejects for good (:output/rejected?, or still failing past :output/give-up-after-ms) goes
        ;; to the job's :on-error (a dead-letter topic) with the run's attempts and failure times
        reject! (fn [seg e info]
                  (when on-error (on-error (merge {:task (:task/name task) :segment seg :exception e} info)))
                  (metrics/error! part))
        ;; false once the batch tried the store (a write or a flush, whatever came of it): see `adopt!`
        fresh (java.util.concurrent.atomic.AtomicBoolean. true)
        write! (fn []
                 (when (pos? (aget size 0))
                   (let [v (into [] (mapcat seq) (.values pending)) t0 (System/nanoTime)]
                     (try (retry/write! policy st budget #(spi/-write! plugin %) reject! v)
                          (finally (.set fresh false)))
                     (doseq [^ArrayList l (.values pending)] (.clear l))
                     (aset size 0 0)
                     (metrics/record-batch! part (count v) (count v) (- (System/nanoTime) t0)))))]
    {:thread (Thread/currentThread) :retry-states retry-states :plugin plugin :pending pending :size size :refs (long-array 1) :write! write!
     ;; [stream task id, Cancellable] of the one wall-clock punctuator of the batch (`tick!`), or nil
     :ticker (volatile! nil)
     :max (long (:task/batch-size task 64))
     :timeout-ns (* 1000000 (max 1 (long (:task/batch-timeout-ms task 5))))
     :st st :live-key live-key :budget budget :fresh fresh
     :commit! (fn [] (write!) (try (retry/call! policy st budget #(spi/-flush! plugin)) (finally (.set fresh false))))}))

(defn- adopt!
  "Stream task `id` joins batch `g`: when the task's last batch (of a thread replaced after retrying past its poll
  budget) was in a run of failures lately (its next attempt due less than the poll budget, at least a minute,
  ago) and `g` has not tried the store yet, `g` continues a copy of that run (its attempts and
  `:output/give-up-after-ms` clock). Not once `g` tried: then it is in a run of its own, or its write worked and
  the outage is over (the thread's tasks join one by one: a later one copying the old run into a batch that had
  just written logged a second \"writing again\" for one outage). A copy,
  not the state itself: the tasks of one replaced thread may go to several threads, and a good write on one of
  them must not end the run another took over (its give-up clock would start again at every failure). A run
  older than that is left alone: the task went to another instance meanwhile, which wrote or handed on its
  segments."
  [{:keys [task store ^Map retry-states]} g id]
  (let [k [(:task/name task) store :task id] prev (.get retry-states k) st (:st g)
        recent (max 60000 (long (:budget g)))]
    (when (and prev (not (identical? prev st)) (retry/failing? prev) (.get ^java.util.concurrent.atomic.AtomicBoolean (:fresh g))
               (< (- (System/currentTimeMillis) (.get ^java.util.concurrent.atomic.AtomicLong (:next-at prev))) recent))
      (retry/continue-run! st prev))
    (.put retry-states k st)))

(defn- join!
  "The batch of the calling stream thread (made on its first task), with stream task `id`'s list added."
  [^ConcurrentHashMap groups spec ctx id]
  (let [g (.computeIfAbsent groups (Thread/currentThread) (reify java.util.function.Function (apply [_ _] (group spec ctx))))]
    (locking g
      (aset ^longs (:refs g) 0 (inc (aget ^longs (:refs g) 0)))
      (.put ^Map (:pending g) id (ArrayList.))
      (adopt! spec g id))
    g))

(defn- leave!
  "Stream task `id` leaves batch `g` of the thread (its unwritten segments dropped: a clean close committed,
  so wrote, them first; after a dirty close they are read again from the committed offsets); the last one out
  closes the plugin."
  [^ConcurrentHashMap groups g id]
  (when (locking g
          (let [^ArrayList l (.remove ^Map (:pending g) id) ^longs size (:size g) ^longs refs (:refs g)
                t (:ticker g)]
            (when l (aset size 0 (- (aget size 0) (.size l))))
            (when (= id (first @t))
              ;; Kafka drops a closing task's punctuators itself; a cancel that throws must not keep the plugin open
              (try (.cancel ^org.apache.kafka.streams.processor.Cancellable (second @t)) (catch Exception _))
              (vreset! t nil))
            (aset refs 0 (dec (aget refs 0)))
            (when (zero? (aget refs 0))
              (.remove groups (:thread g) g)
              ;; no longer a live batch: its run (kept under its tasks for `adopt!`) is not reported as failing
              (.remove ^Map (:retry-states g) (:live-key g) (:st g))
              true)))
    (spi/-close-output! (:plugin g))))

(defn- add!
  "Adds segment `v` of stream task `id` to batch `g`; writes the batch when full."
  [g id v]
  (when (locking g
          (let [^longs size (:size g)]
            (.add ^ArrayList (.get ^Map (:pending g) id) v)
            (when (zero? (aget size 0)) (aset size 1 (System/nanoTime)))
            (aset size 0 (inc (aget size 0)))
            (>= (aget size 0) (long (:max g)))))
    (locking g ((:write! g)))))

(defn- due?
  "True when the oldest pending segment of batch `g` has waited its `:task/batch-timeout-ms`."
  [g]
  (let [^longs size (:size g)]
    (and (pos? (aget size 0)) (>= (- (System/nanoTime) (aget size 1)) (long (:timeout-ns g))))))

(defn- tick!
  "Makes sure batch `g` has its wall-clock punctuator (writing the batch once its oldest segment is due),
  scheduled through stream task `id`'s context `ctx` when it has none: one per batch, not one per stream task
  (12 tasks on a lone instance each woke every quarter of the flush interval, 480 punctuations a second for the
  fan-out job). When that task leaves, the next segment added (or the next task starting) schedules it again;
  meanwhile nothing is pending, or a commit writes it."
  [g ^ProcessorContext ctx id]
  (let [t (:ticker g)]
    (when-not @t
      (let [period (max 1 (quot (long (:timeout-ns g)) 4000000))]
        (vreset! t [id (.schedule ctx (Duration/ofMillis period) PunctuationType/WALL_CLOCK_TIME
                                  (reify Punctuator (punctuate [_ _] (when (due? g) (locking g ((:write! g)))))))])))))

(defn supplier
  "The ProcessorSupplier of plugin output `task` (validated task map, :inject merged) fed by one upstream
  task. The stream tasks of one stream thread share one batch and one plugin (built with the task map when the
  thread's first task starts, closed when its last one closes): segments are gathered up to `:task/batch-size`
  and written (one `-write!` for all the thread's tasks) when full, when the oldest has waited
  `:task/batch-timeout-ms` (one wall-clock punctuator per batch looks every quarter of it, `tick!`), and before every
  commit of any of the thread's tasks (then `-flush!`). Retries count per batch, so per stream thread (`adopt!`).
  `spec`: `:task`, `:job`, `:resolve`, `:metrics` (task name -> task metrics), `:store` (the store name),
  `:retry-states` (a ConcurrentHashMap shared by the application's threads: a thread taking over a failing one's
  tasks continues its count), `:on-error` (the job's: gets a segment the plugin rejected for good, see
  herald.flow.impl.retry/write!), `:stop?` (a fn: true once the application closes, when retries stop)."
  ^ProcessorSupplier [{:keys [task store] :as spec}]
  (let [groups (ConcurrentHashMap.)]
    (reify ProcessorSupplier
      (get [_]
        (let [state (volatile! nil)]
          (reify Processor
            (init [_ ctx]
              (let [id (str (.taskId ctx))
                    g (join! groups spec ctx id)]
                (vreset! state [g id ctx])
                (-on-commit! (.getStateStore ctx ^String store) #(locking g ((:commit! g))))
                (tick! g ctx id)))
            (process [_ record]
              (let [[g id ctx] @state]
                (when-not @(:ticker g) (tick! g ctx id))
                (add! g id (.value ^org.apache.kafka.streams.processor.api.Record record))))
            (close [_]
              (when-let [[g id _] @state]
                (try (leave! groups g id)
                     (catch Exception e
                       (retry/log-line! (str "herald.flow: closing output " (:task/name task) " failed: " e))))))))))))

(defn retry-states
  "A new map for the retry states of an application's plugin outputs."
  ^ConcurrentHashMap []
  (ConcurrentHashMap.))

(defn failures
  "The retry figures of output task `tname` (see `herald.flow.impl.retry/failures`): its totals, and whether the
  batch of a stream thread running now is in a run of failures."
  [^ConcurrentHashMap states tname]
  (let [of (fn [kind] (for [[[n _ k] st] states :when (and (= n tname) (= k kind))] st))
        sum (fn [k] (reduce + 0 (map #(.get ^java.util.concurrent.atomic.AtomicLong (k %)) (of :totals))))]
    {:write-failures (sum :total) :failing? (boolean (some retry/failing? (of :thread))) :rejected-segments (sum :dead)}))
