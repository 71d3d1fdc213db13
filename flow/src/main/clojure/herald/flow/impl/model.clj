(ns herald.flow.impl.model
  "The job model as data: every key of every part of a job, with its type, whether it is optional, its default, a doc string and an example."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defn- k
  "One key description; `opts` may add :optional?, :default, :one-of, :required-when, :allowed-when."
  [key type doc example & {:as opts}]
  (merge {:key key :type type :optional? false :doc doc :example example} opts))

(def job-keys
  "The keys of a job map."
  [(k :workflow :edges "Directed edges `[from to]` between task names. Roots must be inputs; leaves outputs or reduce tasks; no cycles."
      [[:in :inc] [:inc :out]])
   (k :catalog :catalog "One map per task (see *Task*). Every task named in the workflow has exactly one entry."
      [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}])
   (k :flow-conditions :vector "Routing rules for the segments a task emits (see *Flow condition*). Evaluated in order."
      [] :optional? true :default [])
   (k :lifecycles :vector "Hooks called around tasks and batches (see *Lifecycle*)." [] :optional? true :default [])
   (k :windows :vector "Windowed aggregations over the segments a task emits (see *Window*)." [] :optional? true :default [])
   (k :triggers :vector "When a window's state is handed on (see *Trigger*)." [] :optional? true :default [])
   (k :job/name :keyword "The job's name: in metrics, thread names and snapshots." :perf :optional? true :default :job)
   (k :job/doc :string "Free text." "per-minute performance" :optional? true)])

(def task-keys
  "The keys of a task map (a catalog entry)."
  [(k :task/name :keyword "The task's name, as used in the workflow." :inc)
   (k :task/type :enum "What the task is: `:input` reads from a plugin, `:function` applies `:task/fn` to each segment, `:reduce` applies `:task/fn` and hands segments only to its windows (only trigger emissions go on), `:output` writes to a plugin."
      :function :one-of [:input :function :reduce :output])
   (k :task/fn :fn "A namespaced keyword naming a pure fn of a segment returning a segment (a map), several (a sequential collection of maps) or none (nil). Resolved with `requiring-resolve` at validation."
      :my.app/enrich :optional? true :required-when [:task/type #{:function}] :allowed-when [:task/type #{:function :reduce}]
      :default :clojure.core/identity)
   (k :task/params :vector "Values passed before the segment: the fn is called as `(apply f (conj params segment))`."
      [10] :optional? true :default [] :allowed-when [:task/type #{:function :reduce}])
   (k :task/plugin :fn "A namespaced keyword naming a plugin constructor `(fn [task-map] plugin)` (see `herald.flow.spi`)."
      :herald.flow.plugin/log-input :optional? true :required-when [:task/type #{:input :output}]
      :allowed-when [:task/type #{:input :output}])
   (k :task/batch-size :pos-int "Most segments an input reads into one batch. Downstream tasks process batches as they arrive. On a plugin output on `:kafka-streams` (where records come one at a time): most segments gathered into one `-write!` (in-process an output writes each batch as it arrives)."
      64 :optional? true :default 64 :allowed-when [:task/type #{:input :output}])
   (k :task/batch-timeout-ms :nat-int "Longest an input's poll waits for segments before handing on what it has (maybe none, so barriers and timers keep running). On a plugin output on `:kafka-streams`: about the longest a gathered segment waits before its batch is written (also written before every commit)."
      5 :optional? true :default 5 :allowed-when [:task/type #{:input :output}])
   (k :task/parallelism :pos-int "Threads running this task. Inputs run on one thread."
      2 :optional? true :default 1)
   (k :task/group-by-key :group-key "Route segments to this task's threads by the hash of this key (a keyword or a vector of keywords); windows then aggregate per group."
      [:entity :operation] :optional? true :allowed-when [:task/type #{:function :reduce :output}])
   (k :task/group-by-fn :fn "Like `:task/group-by-key` with a fn of the segment returning the group."
      :my.app/tenant :optional? true :allowed-when [:task/type #{:function :reduce :output}])
   (k :task/doc :string "Free text." "adds one to :n" :optional? true)
   (k :output/retries :retries "How often a failed `-write!` or `-flush!` of the output's plugin is tried again (a non-negative integer or `:forever`) before the task fails (the job fails, as with 0). One line is logged when writes start failing and one when they work again."
      5 :optional? true :default 0 :allowed-when [:task/type #{:output}])
   (k :output/backoff-ms :pos-int "The wait before the first retry; each further retry waits twice as long as the one before, at most `:output/backoff-max-ms`."
      100 :optional? true :default 100 :allowed-when [:task/type #{:output}])
   (k :output/backoff-max-ms :pos-int "The longest wait between two retries (at least `:output/backoff-ms`). On `:kafka-streams` a stream thread blocks at most half of `max.poll.interval.ms` in one retry run, then gives its tasks back and is replaced (see *Running on Kafka Streams*)."
      30000 :optional? true :default 30000 :allowed-when [:task/type #{:output}])
   (k :output/rejected? :fn "A fn of the exception of a failed `-write!`: true when the plugin refuses the segments themselves (a bad value), not for an outage. A batch rejected `:output/rejected-retries` times in a row (under the backoff) is then written in halves, down to the segments refused, and each of those goes to the job's `:on-error` (counted as an error of the task); other failures are retried under `:output/retries`. Without it every failure is retried alike."
      :my.app/bad-value? :optional? true :allowed-when [:task/type #{:output}])
   (k :output/rejected-retries :nat-int "With `:output/rejected?`: the retries of a rejected batch before it is split and the refused segments handed on."
      10 :optional? true :default 10 :allowed-when [:task/type #{:output}])
   (k :output/give-up-after-ms :pos-int "A time budget for any failure, an outage included: once a batch has failed for this long (since the first failure of the run), the next attempt writes it in halves, down to the segments that still fail, and each of those goes to the job's `:on-error` with `:attempts`, `:first-failure-at` and `:last-failure-at` (counted as an error of the task); the output then goes on, the next batch with a budget of its own. Splitting a batch of n costs up to 2n-1 writes, fast while the server refuses connections. Without it only `:output/rejected?` failures are handed on. Needs `:output/retries` above 0 (refused otherwise: the first failure would fail the task)."
      600000 :optional? true :allowed-when [:task/type #{:output}])
   (k :kafka/topic :string "On the `:kafka-streams` runtime (where it is required for inputs and outputs): the topic an input reads or an output writes. The in-process runtime uses `:task/plugin` instead and ignores it."
      "requests" :optional? true :allowed-when [:task/type #{:input :output}])
   (k :kafka/start-from :enum "On `:kafka-streams`: where this input starts reading its topic when the application has no committed offset for it: `:earliest` (everything the topic holds) or `:latest` (only what is written from now on). Default: the `:start-from` of the `:kafka` options (itself `:earliest` by default)."
      :latest :optional? true :one-of [:earliest :latest] :allowed-when [:task/type #{:input}])
   (k :kafka/serde :serde "On `:kafka-streams`: how the topic's values are read and written. `:edn` (EDN text; reading also accepts the binary form), `:codec` (herald's tagged binary codec) or a namespaced keyword naming a var holding an `org.apache.kafka.common.serialization.Serde` of maps (default `:edn`)."
      :edn :optional? true :allowed-when [:task/type #{:input :output}])])

(def flow-condition-keys
  "The keys of a flow condition."
  [(k :flow/from :task "The task whose emitted segments this condition routes." :inc)
   (k :flow/to :targets "Where matching segments go: a vector of task names downstream of `:flow/from`, `:all` or `:none`."
      [:out] )
   (k :flow/predicate :predicate "A namespaced keyword naming `(fn [segment] bool)` (or `(fn [segment exception] bool)` with `:flow/thrown-exception?`), or `[:and p ...]`, `[:or p ...]`, `[:not p]` over them."
      [:and :my.app/even? [:not :my.app/test?]])
   (k :flow/short-circuit? :boolean "When it matches, stop evaluating later conditions for this segment. Short-circuit conditions come first."
      true :optional? true :default false)
   (k :flow/thrown-exception? :boolean "Route the input segment of a task fn that threw, instead of an emitted segment."
      true :optional? true :default false)
   (k :flow/post-transform :fn "With `:flow/thrown-exception?`: `(fn [segment exception] segment)` building what is routed. Default: the segment with `:flow/error` (message, data, task) assoc'ed."
      :my.app/error->segment :optional? true :allowed-when [:flow/thrown-exception? #{true}])
   (k :flow/doc :string "Free text." "even numbers only" :optional? true)])

(def lifecycle-keys
  "The keys of a lifecycle."
  [(k :lifecycle/task :task-or-all "The task whose hooks these are, or `:all`." :inc)
   (k :lifecycle/calls :calls "A namespaced keyword naming a map of hooks (see *Lifecycle calls*)." :my.app/timing-calls)
   (k :lifecycle/doc :string "Free text." "opens the database" :optional? true)])

(def lifecycle-call-keys
  "The keys of a lifecycle calls map."
  [(k :lifecycle/before-task-start :hook "`(fn [event lifecycle] map)` on each task thread before it starts; the map is merged into the event." nil :optional? true)
   (k :lifecycle/before-batch :hook "`(fn [event lifecycle] map)` before each batch; `:batch` in the event." nil :optional? true)
   (k :lifecycle/after-batch :hook "`(fn [event lifecycle] map)` after each batch; `:batch` and `:results` in the event." nil :optional? true)
   (k :lifecycle/after-task-stop :hook "`(fn [event lifecycle] map)` when the task thread stops (completion or kill)." nil :optional? true)
   (k :lifecycle/handle-exception :hook "`(fn [event lifecycle phase exception] action)` for an exception thrown by a hook or plugin on one of the task's threads, to log or clean up: the job then fails (`:defer` hands the exception to the next handler first). A task fn's exception is never here: it is routed as data."
      nil :optional? true)])

(def window-keys
  "The keys of a window."
  [(k :window/id :keyword "The window's name, unique in the job." :per-minute)
   (k :window/task :task "The task whose emitted segments are aggregated." :aggregate)
   (k :window/type :enum "`:fixed` (tumbling extents of `:window/range`), `:sliding` (extents of `:window/range` every `:window/slide`) or `:global` (one extent)."
      :fixed :one-of [:fixed :sliding :global])
   (k :window/aggregation :aggregation "A built-in (`:herald.flow/count`, `[:herald.flow/sum k]`, `[:herald.flow/min k]`, `[:herald.flow/max k]`, `[:herald.flow/average k]`, `:herald.flow/collect`, `[:herald.flow/percentiles k]`) or a namespaced keyword naming an aggregation map (see *Aggregation*), optionally in a vector with arguments."
      [:herald.flow/percentiles :duration-ms])
   (k :window/time-key :keyword "The segment key holding its event time in epoch milliseconds." :at
      :optional? true :required-when [:window/type #{:fixed :sliding}])
   (k :window/range :duration "Extent length: milliseconds, or `[n unit]` with unit one of :ms :seconds :minutes :hours :days (singular accepted)."
      [1 :minute] :optional? true :required-when [:window/type #{:fixed :sliding}] :allowed-when [:window/type #{:fixed :sliding}])
   (k :window/slide :duration "Distance between the starts of sliding extents." [10 :seconds]
      :optional? true :required-when [:window/type #{:sliding}] :allowed-when [:window/type #{:sliding}])
   (k :window/allowed-lateness :duration "How far behind the largest event time seen a segment may be and still count: the task's watermark is that largest time minus this."
      [5 :seconds] :optional? true :default 0 :allowed-when [:window/type #{:fixed :sliding}])
   (k :window/on-late :fn "`(fn [window segment])` called for a segment whose extents have all closed (it is dropped, and counted as `:late` in the task's metrics)."
      :my.app/log-late :optional? true :allowed-when [:window/type #{:fixed :sliding}])
   (k :window/doc :string "Free text." "requests per minute" :optional? true)])

(def trigger-keys
  "The keys of a trigger."
  [(k :trigger/window-id :window "The window this trigger fires." :per-minute)
   (k :trigger/id :keyword "The trigger's name (default: its position)." :on-close :optional? true)
   (k :trigger/on :enum "`:segment` every `:trigger/threshold` segments of an extent, `:timer` every `:trigger/period` of wall-clock time, `:watermark` when the watermark passes an extent's end. Every extent fires its triggers once more when it closes, and all fire when the job completes."
      :watermark :one-of [:segment :timer :watermark])
   (k :trigger/threshold :pos-int "Segments per extent between firings." 1000
      :optional? true :required-when [:trigger/on #{:segment}] :allowed-when [:trigger/on #{:segment}])
   (k :trigger/period :duration "Wall-clock time between firings." [10 :seconds]
      :optional? true :required-when [:trigger/on #{:timer}] :allowed-when [:trigger/on #{:timer}])
   (k :trigger/refinement :enum "After firing, keep the extent's state (`:accumulating`) or start it afresh (`:discarding`)."
      :discarding :optional? true :default :accumulating :one-of [:accumulating :discarding])
   (k :trigger/sync :fn "`(fn [fired])` called with the fired extent (see *Fired extent*): store it, publish it." :my.app/store-minute! :optional? true)
   (k :trigger/emit :fn "`(fn [fired])` returning segment(s) sent downstream of the window's task." :my.app/minute->row :optional? true)
   (k :trigger/doc :string "Free text." "one row per closed minute" :optional? true)])

(def aggregation-keys
  "The keys of a custom aggregation map."
  [(k :aggregation/init :agg-fn "`(fn [window] state)`: the state of a new extent." nil)
   (k :aggregation/create-state-update :agg-fn "`(fn [window state segment] update)`: what a segment changes." nil)
   (k :aggregation/apply-state-update :agg-fn "`(fn [window state update] state)`: apply it (may mutate and return a mutable state, e.g. a histogram)." nil)
   (k :aggregation/extract :agg-fn "`(fn [window state] value)`: the value handed to triggers (default: the state)." nil :optional? true)])

(def fired-keys
  "The keys of the fired extent triggers receive."
  [(k :window/id :keyword "The window." :per-minute)
   (k :trigger/id :keyword "The trigger that fired." :on-close)
   (k :event :enum "Why it fired: `:segment`, `:timer`, `:watermark` (the extent closed) or `:job-completed`." :watermark)
   (k :group :any "The group key (nil when the task is not grouped)." [:inbound :get])
   (k :lower :long "Start of the extent, epoch ms, inclusive." 1763812800000)
   (k :upper :long "End of the extent, epoch ms, exclusive." 1763812860000)
   (k :value :any "The extracted aggregation value." {:count 812 :p50 3 :p95 9 :p99 17 :max 40})])

(def sections
  "Every part of the model, in documentation order: [section-key title keys]."
  [[:job "Job" job-keys]
   [:task "Task (an entry of `:catalog`)" task-keys]
   [:flow-condition "Flow condition" flow-condition-keys]
   [:lifecycle "Lifecycle" lifecycle-keys]
   [:lifecycle-calls "Lifecycle calls (the map a `:lifecycle/calls` keyword names)" lifecycle-call-keys]
   [:window "Window" window-keys]
   [:trigger "Trigger" trigger-keys]
   [:aggregation "Aggregation (the map a custom `:window/aggregation` keyword names)" aggregation-keys]
   [:fired "Fired extent (what `:trigger/sync` and `:trigger/emit` receive)" fired-keys]])

(def submit-keys
  "The options of `herald.flow/submit-job`."
  [(k :runtime :enum "What runs the job: `:in-process` (threads and bounded queues in this JVM) or `:kafka-streams` (a Kafka Streams application: edges become topics, windows state stores; see *Kafka Streams options*)."
      :kafka-streams :optional? true :default :in-process :one-of [:in-process :kafka-streams])
   (k :data-dir :path "Where the job's state goes. In-process: snapshots (with it, window state is exactly-once over replayable inputs and a resubmitted job resumes from its last snapshot; without it nothing is checkpointed). On `:kafka-streams`: the parent of the local state stores (`state.dir`; the state itself is in changelog topics)."
      "data/perf" :optional? true)
   (k :checkpoint-interval-ms :pos-int "Time between epoch barriers (snapshots); on `:kafka-streams` the commit interval (`commit.interval.ms`, Kafka's default there: 100 with exactly-once, 30000 otherwise)."
      1000 :optional? true :default 1000)
   (k :queue-capacity :pos-int "In-process only: batches each task thread's inbound queue holds before senders block."
      32 :optional? true :default 32)
   (k :on-error :live-fn "`(f {:task :segment :exception})` for a task fn that threw and no flow condition routed (default: printed to stderr, the last 20 kept in `job-metrics`)."
      nil :optional? true)
   (k :inject :inject "Task name -> map merged into that task map (live values: queues, atoms, fns; or `:kafka/topic` per environment)."
      {:in {:kafka/topic "requests"}} :optional? true :default {})
   (k :fuse? :boolean "In-process: run straight chains of tasks in one loop (Kafka Streams always runs a sub-topology's processors in one loop)."
      true :optional? true :default true)
   (k :kafka :map "The options of the `:kafka-streams` runtime (see *Kafka Streams options*)."
      {:bootstrap-servers "127.0.0.1:9092"} :optional? true :required-when [:runtime #{:kafka-streams}]
      :allowed-when [:runtime #{:kafka-streams}])])

(def kafka-keys
  "The options of the `:kafka-streams` runtime (`submit-job`'s `:kafka` map)."
  [(k :bootstrap-servers :string "The brokers to connect to (`bootstrap.servers`)." "127.0.0.1:9092")
   (k :application-id :string "The Kafka Streams `application.id`: the consumer group, the prefix of internal topics and the identity a restarted job resumes under. Default: `herald-` and the job's name."
      "herald-perf" :optional? true)
   (k :processing-guarantee :enum "`:exactly-once-v2` (state, outputs and input offsets commit in one transaction) or `:at-least-once`."
      :exactly-once-v2 :optional? true :default :exactly-once-v2 :one-of [:exactly-once-v2 :at-least-once])
   (k :threads :pos-int "Stream threads (`num.stream.threads`). Default: the largest `:task/parallelism` of the job."
      2 :optional? true)
   (k :store :enum "Window state stores: `:rocksdb` (on disk under the state dir) or `:in-memory` (rebuilt from the changelog on start); both are changelogged."
      :rocksdb :optional? true :default :rocksdb :one-of [:rocksdb :in-memory])
   (k :start-from :enum "Where an application with no committed offsets starts reading its inputs (`auto.offset.reset`)."
      :earliest :optional? true :default :earliest :one-of [:earliest :latest])
   (k :replication-factor :pos-int "Replication of the topics the runtime creates (repartition topics; changelogs through `replication.factor`)."
      3 :optional? true :default 1)
   (k :config :config "Any other Kafka Streams, consumer, producer or admin setting, by its Kafka name (string or keyword key); applied last, so it wins."
      {"max.poll.records" 500} :optional? true :default {})])

(def runtime-sections
  "The options of running a job (not part of the job value), in documentation order."
  [[:submit "Submit options (the second argument of `submit-job`)" submit-keys]
   [:kafka "Kafka Streams options (the `:kafka` map of the submit options)" kafka-keys]])

(def by-section
  "Section key -> key -> description (the job's sections and the runtime options)."
  (into {} (map (fn [[s _ ks]] [s (into {} (map (juxt :key identity)) ks)])) (concat sections runtime-sections)))

(defn defaults
  "The defaults of `section` as a map, for keys that have one."
  [section]
  (into {} (keep (fn [[key d]] (when (contains? d :default) [key (:default d)]))) (by-section section)))

(defn- cell [x] (-> (if (string? x) x (pr-str x)) (str/replace "|" "\\|") (str/replace "\n" " ")))

(defn markdown
  "The model as Markdown tables, one per section (the reference part of docs/flow.md)."
  []
  (str/join
   "\n"
   (for [[_ title ks] (concat sections runtime-sections)]
     (str "### " title "\n\n| key | type | optional? | default | meaning | example |\n|---|---|---|---|---|---|\n"
          (str/join (for [{:keys [key type optional? default doc example one-of required-when] :as d} ks]
                      (format "| `%s` | %s | %s | %s | %s | %s |\n" key
                              (if one-of (str/join ", " (map cell one-of)) (name type))
                              (cond required-when (str "required when " (cell (first required-when)) " is "
                                                       (str/join "/" (sort (map cell (second required-when)))))
                                    optional? "yes" :else "no")
                              (if (contains? d :default) (str "`" (cell default) "`") "")
                              (cell doc)
                              (if (some? example) (str "`" (cell example) "`") ""))))))))
