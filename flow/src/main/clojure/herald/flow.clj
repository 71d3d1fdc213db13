(ns herald.flow
  "A data-driven dataflow engine: a job is a plain map (workflow, catalog, flow conditions, lifecycles, windows, triggers) run in-process or on Kafka Streams.

  ```clojure
  (def job {:workflow [[:in :inc] [:inc :out]]
            :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
                      {:task/name :inc :task/type :function :task/fn :my.app/inc-n}
                      {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]})
  (def out (atom []))
  (-> (submit-job job {:inject {:in {:seq/segments [{:n 1} {:n 2}]} :out {:sink/atom out}}})
      (await-job 5000))
  ```
  Every key of a job is described by `model` (see `describe`) and checked by `validate` before anything
  runs; docs/flow.md is generated from the same model. Plugins: `herald.flow.spi`, `herald.flow.plugin`.
  A service feeds a running job with `push!` (a `push-input`, with backpressure) and asks
  `await-caught-up` when everything it handed in has been written.
  The same job runs on Kafka Streams with `(submit-job job {:runtime :kafka-streams :kafka {...}})`."
  (:require [herald.flow.impl.log :as log]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.model :as model]
            [herald.flow.impl.plan]
            [herald.flow.impl.progress :as progress]
            [herald.flow.impl.push :as push]
            [herald.flow.impl.retry :as retry]
            [herald.flow.impl.runtime :as runtime]
            [herald.flow.impl.types :as t]
            [herald.flow.impl.validate :as validate]
            [herald.flow.spi :as spi]))

(set! *warn-on-reflection* true)

(def model
  "The job model: a vector of [section title keys], each key `{:key :type :optional? :default :doc :example}`
  (plus `:one-of`, `:required-when [k #{v}]`, `:allowed-when [k #{v}]`)."
  model/sections)

(defn describe
  "The model of `section` (:job :task :flow-condition :lifecycle :lifecycle-calls :window :trigger
  :aggregation :fired, and the runtime options :submit and :kafka) as a map of key -> description, or the
  description of one `key`; with no argument, the job's section names."
  ([] (mapv first model/sections))
  ([section] (model/by-section section))
  ([section key] (get-in model/by-section [section key])))

(defn model-markdown
  "The model rendered as Markdown tables (the reference half of docs/flow.md)."
  []
  (model/markdown))

(defn validate
  "Checks `job` and returns it with every default filled in, or throws ex-info
  `{:type :herald.flow/invalid-job :path [...] :key k :value v :problem \"...\" :hint \"...\"}` whose
  message names the key, the value and the fix. Fns named by keyword are resolved (their namespaces
  loaded) here: an unresolvable fn is a validation error."
  [job]
  (validate/validate job))

(defn plan
  "The physical plan `submit-job` would run for `job` (validated first): a vector of stages, each
  `{:tasks [names fused into one loop] :parallelism threads :targets [stage ids]}`. `opts` as for
  `submit-job` (`:fuse?` matters)."
  ([job] (plan job {}))
  ([job opts]
   (mapv #(select-keys % [:id :tasks :parallelism :targets])
         (herald.flow.impl.plan/wire (validate job) (herald.flow.impl.plan/stages (validate job) opts) 1))))

(defn- kafka
  "The var `sym` of the Kafka Streams runtime, loaded on first use so that in-process users never load Kafka."
  [sym]
  (requiring-resolve (symbol "herald.flow.kafka" (name sym))))

(defn- kafka? [handle] (= :kafka-streams (:runtime handle)))

(defn submit-job
  "Validates `job` (see `validate`) and starts it on the runtime `:runtime` names; returns a handle for
  `await-job`, `kill-job` and `job-metrics`. A job that cannot run throws here, before anything starts.
  In-process, its plugins are built and its last snapshot in `:data-dir` is restored. On `:kafka-streams`
  the job becomes a Kafka Streams topology (see docs/flow.md, \"Running on Kafka Streams\"); what cannot be
  mapped there throws `:herald.flow/unsupported` naming the key (\"not supported on :kafka-streams: ...\").

  | option | type | default | meaning |
  |---|---|---|---|
  | `:runtime` | `:in-process` or `:kafka-streams` | `:in-process` | what runs the job; the Kafka namespaces are loaded only for `:kafka-streams` |
  | `:data-dir` | string or File | none | in-process: where snapshots go; with it, window state is exactly-once over replayable inputs and a resubmitted job resumes from its last snapshot; without it nothing is checkpointed. Kafka Streams: the parent of its local state (`state.dir`) |
  | `:checkpoint-interval-ms` | pos-int | 1000 | time between epoch barriers (snapshots); Kafka Streams: `commit.interval.ms` (its default when absent) |
  | `:queue-capacity` | pos-int | 32 | in-process only: batches each task thread's inbound queue holds before senders block |
  | `:on-error` | fn | prints to stderr, keeps the last 20 in `job-metrics` | `(f {:task :segment :exception})` for a task fn that threw and no flow condition routed, and for a segment an output handed on (`:output/rejected?`, `:output/give-up-after-ms`; then also `:attempts :first-failure-at :last-failure-at`) |
  | `:inject` | map | {} | task name -> map merged into that task map (live values: queues, atoms, fns; `:kafka/topic`) |
  | `:fuse?` | boolean | true | in-process: run straight chains of tasks in one loop (`false` is refused on Kafka Streams) |
  | `:kafka` | map | required for `:kafka-streams` | `:bootstrap-servers`, `:application-id`, `:processing-guarantee` (`:exactly-once-v2`), `:threads`, `:store`, `:start-from`, `:replication-factor`, `:config`: see `(describe :kafka)` |"
  ([job] (submit-job job {}))
  ([job opts]
   (validate/check-map! job)
   (validate/validate-opts opts)
   (let [names (set (map :task/name (:catalog job)))]
     (doseq [n (keys (:inject opts)) :when (not (names n))]
       (t/invalid! [:opts :inject n] :inject n "names no task of the catalog" (str "inject into one of " (vec (sort names))))))
   (let [job (cond-> job
               (:inject opts) (update :catalog (fn [c] (mapv #(merge % (get-in opts [:inject (:task/name %)])) c))))]
     (if (= :kafka-streams (:runtime opts))
       ((kafka 'start!) job (validate job) opts)
       (assoc (runtime/start! (validate job) opts) :opts opts)))))

(defn await-job
  "Blocks until the job ends (or `timeout-ms` passes: then nil); returns its status map:
  `{:status :completed|:killed|:failed, :error Throwable (when failed), :last-snapshot {:epoch :at}}`.
  A job on Kafka Streams reads unbounded topics: it ends only when killed or failed."
  ([handle] (deref (get-in handle [:coord :done])))
  ([handle timeout-ms] (deref (get-in handle [:coord :done]) timeout-ms nil)))

(defn kill-job
  "Stops the job and returns the status map. In-process: threads interrupted, plugins closed; its last
  snapshot stays for a resubmit to resume. Kafka Streams: the application closes cleanly (committing its
  transaction and leaving the group); a resubmit with the same `:application-id` resumes from the committed
  offsets and state.

  | option | type | default | meaning |
  |---|---|---|---|
  | `:snapshot?` | boolean | false | in-process: first take one more snapshot (flushing outputs), so a resubmit replays nothing; needs `:data-dir`. Kafka Streams always commits on close |
  | `:timeout-ms` | pos-int | 10000 | longest to wait for that snapshot (Kafka Streams: for the close) before stopping anyway |"
  ([handle] (kill-job handle {}))
  ([handle {:keys [snapshot? timeout-ms] :or {timeout-ms 10000} :as opts}]
   (doseq [[k v] opts :when (not (#{:snapshot? :timeout-ms} k))]
     (t/invalid! [:opts k] k v "is not an option of kill-job" "use :snapshot? or :timeout-ms"))
   (if (kafka? handle)
     ((kafka 'kill-job!) handle timeout-ms)
     (do (when (and snapshot? (:data-dir (:opts handle)))
           ((get-in handle [:coord :checkpoint!]) timeout-ms))
         ((get-in handle [:coord :kill!]))))
   (await-job handle)))

(defn job-metrics
  "A live view of the job: `{:status ... :last-snapshot {:epoch :at} :tasks {name {...}} :recent-errors [...]}`;
  per task: `:segments-in`, `:segments-out`, `:batches`, `:errors`, `:throughput-sps` (over the last second),
  `:late`, `:batch-latency-us` quantiles (for an input: of its polls), `:parallelism`, `:stage` (tasks fused in
  one loop share it) and, for inputs that can tell, `:lag` (the log input: bytes not yet read; the push
  input: segments waiting; on Kafka Streams: records behind the topic's end, summed over partitions). Outputs
  add `:write-failures` (failed write or flush attempts so far), `:failing?` (in a run of failures now) and
  `:rejected-segments` (segments handed to `:on-error` as rejected for good, `:output/rejected?`).
  On Kafka Streams every other task adds `:on-error-failures` (failed calls of `:on-error` for its segments so
  far) and `:on-error-failing?` (`:on-error` throwing now: the record waits), and every task that reads a topic (an input, a regrouped or windowed task's repartition
  topic) has `:lag-by-partition` `{partition records-lag}` for the partitions this instance reads and `:lag`
  their sum, and `:kafka` `{:state :process-rate :process-total :commit-rate :records-lag-max}` comes from
  the client's own metrics, with `:group-lag` (the input records the application's consumer group, every
  instance, has not committed; refreshed in the background at most once a second, nil until known)."
  [handle]
  (if (kafka? handle)
    ((kafka 'job-metrics) handle)
    (let [stage-of (into {} (for [s (:stages handle) t (:tasks s)] [t s]))]
      (assoc @(get-in handle [:coord :status])
             :job/name (get-in handle [:job :job/name])
             :recent-errors @(:recent-errors handle)
             :tasks (into {} (for [[tname m] (:metrics handle)]
                               [tname (cond-> (assoc (metrics/report m)
                                                     :parallelism (:parallelism (stage-of tname))
                                                     :stage (:tasks (stage-of tname)))
                                        (satisfies? spi/Lag (get-in handle [:inputs tname]))
                                        (assoc :lag (spi/-lag (get-in handle [:inputs tname])))
                                        (get-in handle [:retry-states tname])
                                        (merge (retry/failures @(get-in handle [:retry-states tname]))))]))))))

(defn job-counters
  "The job's counters, per task: `{task-name {:segments-in :segments-out :batches :errors :late}}` (the same
  figures as `job-metrics`, same meaning). Cheap enough to call per request or per second: in-process it
  only sums each thread's counters (microseconds), where `job-metrics` also merges the batch-latency
  histograms (milliseconds on a large job). Counters are read without locking, so one may lag its thread by
  the batch in flight. On Kafka Streams it is taken from `job-metrics`."
  [handle]
  (if (kafka? handle)
    (update-vals (:tasks (job-metrics handle)) #(select-keys % [:segments-in :segments-out :batches :errors :late]))
    (update-vals (:metrics handle) metrics/counters)))

(defn await-caught-up
  "Blocks until the job has caught up with what its inputs had accepted when this was called; true then,
  false when `timeout-ms` passes first (or the job ends otherwise than completed).

  In-process: once every segment accepted before the call (a `push!` that returned true, a record appended
  to a `log-input`'s log) has been read, processed by every task, written by the outputs and flushed
  (`-flush!`): the inputs first read up to where their sources were, then an epoch barrier passes through
  every thread, each flushing its outputs (with a `:data-dir` that epoch is also a snapshot). A segment that
  only went into a window counts once the window has it (what a trigger emits later does not). Inputs that
  cannot tell how far their source goes (`seq-input`, `queue-input`) count with what they had read. A
  completed job has caught up. Latency: about the inputs' `:task/batch-timeout-ms` when idle.

  On `:kafka-streams`: once the application's committed offsets reach the end offsets the input topics had
  at the call (every partition, every instance of the application), then, per level of regrouping, the
  end offsets of its repartition topics; plugin outputs flush before every commit, so what the offsets
  cover is written. Needs the brokers (an Admin client); a commit comes every `:checkpoint-interval-ms`."
  [handle timeout-ms]
  (if (kafka? handle)
    ((kafka 'await-caught-up) handle (long timeout-ms))
    (progress/await-caught-up handle (long timeout-ms))))

(defn- push-input!
  "The push input of task `task` of `handle`, or an ex-info naming what is wrong."
  [handle task]
  (let [in (get-in handle [:inputs task])]
    (when-not (push/push-input? in)
      (throw (ex-info (str "Task " (pr-str task) " of job " (get-in handle [:job :job/name]) " is not a "
                           ":herald.flow.plugin/push-input running in-process")
                      {:type :herald.flow/not-a-push-input :task task})))
    in))

(defn push!
  "Pushes `segment` (a map) into the running job's push input `task` (`:task/plugin
  :herald.flow.plugin/push-input`). Waits while its buffer is full (backpressure), at most `timeout-ms`
  (default: as long as the job runs); returns true when the segment was accepted, false when the buffer
  stayed full until the timeout (with 0: at once; such a refusal is counted as `:dropped`). Throws ex-info
  `:herald.flow/input-closed` after `close-input!`, `:herald.flow/job-not-running` (with `:status`) once
  the job has ended, `:herald.flow/not-a-push-input` for another task. Any thread may push; a push takes no
  lock and wakes no thread."
  ([handle task segment] (push! handle task segment Long/MAX_VALUE))
  ([handle task segment timeout-ms]
   (let [in (push-input! handle task)
         done (get-in handle [:coord :done])
         r (push/push! in segment (long timeout-ms) #(not (realized? done)))]
     (case r
       :added true
       :full false
       (if (realized? done)
         (throw (ex-info (str "Job " (get-in handle [:job :job/name]) " is not running (" (name (:status @done)) ")")
                         {:type :herald.flow/job-not-running :status (:status @done) :task task}))
         (throw (ex-info (str "Input " (pr-str task) " of job " (get-in handle [:job :job/name]) " is closed")
                         {:type :herald.flow/input-closed :task task})))))))

(defn offer!
  "Adds `segment` at once to `in`, a push input value (`herald.flow.plugin/push-input`) that its owner polls
  itself (`herald.flow.spi/-poll!`) rather than a job: true when accepted, false when its buffer is full
  (counted as `:dropped`) or it is closed. Never waits; takes no lock and wakes no thread. For a request path
  that must not wait (a service's request records); a running job's push input takes `push!`."
  [in segment]
  (when-not (push/push-input? in)
    (throw (ex-info "offer! takes a herald.flow.plugin/push-input value" {:type :herald.flow/not-a-push-input})))
  (= :added (push/push! in segment 0 (constantly true))))

(defn close-input!
  "Ends push input `task` of `handle` (or the push input value `in` of `offer!`): further pushes throw (offers
  are refused), and the input ends once it has handed on what it holds (the job completes when all its inputs
  have ended and it drained)."
  ([in] (push/close! in))
  ([handle task]
   (push/close! (push-input! handle task))))

(defn push-stats
  "`{:accepted :dropped :queued :capacity}` of push input `task` of `handle` (or of the push input value `in`
  of `offer!`): segments accepted so far, pushes refused (full at their timeout), segments waiting in the
  buffer, its capacity."
  ([in] (push/stats in))
  ([handle task]
   (push/stats (push-input! handle task))))

(defn open-log
  "The durable local log in directory `dir` (shared by every caller in this JVM), for a service to append to
  and a job's `:herald.flow.plugin/log-input` to read. Options: `:segment-bytes` (default 64 MiB per file),
  `:fsync?` (default false: an appended record survives a process crash at once, a power loss only when true)."
  ([dir] (open-log dir {}))
  ([dir opts] (log/shared-log dir opts)))

(defn append!
  "Appends one record (EDN data) to `log`; returns its offset."
  [log record]
  (log/append! log record))

(defn append-all!
  "Appends records in one write; returns their offsets."
  [log records]
  (log/append-all! log records))

(defn log-end-offset
  "The offset the next appended record will get."
  [log]
  (log/end-offset log))

(defn delete-log-before!
  "Deletes the log's segment files whose records all lie before `offset` (e.g. the smallest offset every
  consuming job's last snapshot holds); returns how many files went."
  [log offset]
  (log/delete-before! log offset))

(defn close-log!
  "Closes the log (forcing it to disk)."
  [log]
  (log/close-log! log))
