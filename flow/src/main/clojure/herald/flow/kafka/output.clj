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

(defn- poll-budget-ms
  "Half the main consumer's max.poll.interval.ms (Kafka's default 300000): the longest one retry run may block
  the stream thread before it hands its tasks back (past max.poll.interval.ms the member would be evicted)."
  ^long [^ProcessorContext ctx]
  (let [cfg (.appConfigs ctx)
        v (or (get cfg "main.consumer.max.poll.interval.ms") (get cfg "consumer.max.poll.interval.ms")
              (get cfg "max.poll.interval.ms") 300000)]
    (quot (Long/parseLong (str v)) 2)))

(defn- writer
  "The output's state on one stream task: `:write!` writes the pending batch, `:commit!` also flushes."
  [{:keys [task job store ^Map retry-states]} ^ProcessorContext ctx plugin ^ArrayList pending part]
  (let [policy (retry/policy task (:job/name job))
        st (.computeIfAbsent retry-states [(:task/name task) (str (.taskId ctx)) store]
                             (reify java.util.function.Function (apply [_ _] (retry/state))))
        budget (poll-budget-ms ctx)
        write! (fn []
                 (when (pos? (.size pending))
                   (let [v (vec pending) t0 (System/nanoTime)]
                     (retry/call! policy st budget #(spi/-write! plugin v))
                     (.clear pending)
                     (metrics/record-batch! part (count v) (count v) (- (System/nanoTime) t0)))))]
    {:write! write!
     :commit! (fn [] (write!) (retry/call! policy st budget #(spi/-flush! plugin)))}))

(defn supplier
  "The ProcessorSupplier of plugin output `task` (validated task map, :inject merged) fed by one upstream
  task: per stream task it builds the plugin with the task map, gathers segments up to `:task/batch-size`,
  writes them when full, when a wall-clock punctuator every `:task/batch-timeout-ms` finds some waiting, and
  before every commit (then `-flush!`), and closes the plugin with the task. `spec`: `:task`, `:job`,
  `:resolve`, `:metrics` (task name -> task metrics), `:store` (the store name), `:retry-states` (a
  ConcurrentHashMap shared by the application's threads: a replaced thread's successor continues the count)."
  ^ProcessorSupplier [{:keys [task resolve metrics store] :as spec}]
  (reify ProcessorSupplier
    (get [_]
      (let [state (volatile! nil)]
        (reify Processor
          (init [_ ctx]
            (let [plugin ((resolve (:task/plugin task)) task)
                  pending (ArrayList.)
                  store-obj (.getStateStore ctx ^String store)
                  w (writer spec ctx plugin pending (metrics/part (get metrics (:task/name task))))]
              (vreset! state (assoc w :plugin plugin :pending pending :max (long (:task/batch-size task 64))))
              (-on-commit! store-obj (:commit! w))
              (.schedule ctx (Duration/ofMillis (max 1 (long (:task/batch-timeout-ms task 5)))) PunctuationType/WALL_CLOCK_TIME
                         (reify Punctuator (punctuate [_ _] ((:write! w)))))))
          (process [_ record]
            (let [{:keys [^ArrayList pending ^long max write!]} @state]
              (.add pending (.value ^org.apache.kafka.streams.processor.api.Record record))
              (when (>= (.size pending) max) (write!))))
          (close [_]
            (when-let [{:keys [plugin]} @state]
              (try (spi/-close-output! plugin)
                   (catch Exception e
                     (retry/log-line! (str "herald.flow: closing output " (:task/name task) " failed: " e)))))))))))

(defn retry-states
  "A new map for the retry states of an application's plugin outputs."
  ^ConcurrentHashMap []
  (ConcurrentHashMap.))

(defn failures
  "The retry figures of output task `tname` over every stream task (see `herald.flow.impl.retry/failures`)."
  [^ConcurrentHashMap states tname]
  (retry/failures (for [[[n] st] states :when (= n tname)] st)))
