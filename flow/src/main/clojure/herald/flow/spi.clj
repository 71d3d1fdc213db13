(ns herald.flow.spi
  "The plugin contract of herald.flow: inputs and outputs of a job, built by a constructor a task names with :task/plugin.

  A task map names its plugin with `:task/plugin :my.ns/constructor`; the runtime calls
  `(constructor task-map)` once per task thread before the job starts and uses the value it returns.
  Plugin options live in the task map under the plugin's own namespace (`:log/dir`, `:sink/fn`, ...);
  a constructor that finds one missing or wrong throws `herald.flow.spi/invalid-option` so the job is
  refused at submit time with the key named.

  Threading: each instance is used by one thread at a time. Delivery: the runtime gives every output
  every segment at least once; exactly-once state needs replayable inputs (a `-position` that is not
  nil and a `-seek!` that honours it)."
  (:require [herald.flow.impl.types :as t]))

(set! *warn-on-reflection* true)

(defprotocol Input
  "A source of segments."
  (-poll! [in max-n timeout-ms]
    "Returns a vector of at most `max-n` segments, waiting at most `timeout-ms` for them (an empty vector when
    none came), or nil once the input is exhausted and will never return a segment again.")
  (-position [in]
    "A serializable value naming the place just after the last segment `-poll!` returned, or nil when the
    input cannot replay. Called at each epoch barrier; stored in the snapshot.")
  (-seek! [in position]
    "Continue reading at `position` (a value `-position` returned in an earlier run). Called before the first
    `-poll!` when a job resumes from a snapshot.")
  (-close-input! [in] "Releases what the input holds. Called once, on completion, kill or failure."))

(defprotocol Lag
  "Optional, for inputs: how far behind the end of its source an input is (shown by `herald.flow/job-metrics`)."
  (-lag [in] "A number in the source's unit (the log input: bytes), or nil when unknown. Any thread may call it."))

(defprotocol Progress
  "Optional, for inputs: lets `herald.flow/await-caught-up` tell when an input has read everything its source
  had accepted at a given moment."
  (-read-past [in]
    "Returns a fn of no arguments, callable from any thread, that returns true once `-poll!` has returned
    every segment the source had accepted when `-read-past` was called (the log input: the log's end
    offset then; the push input: every push that had returned)."))

(defprotocol Output
  "A sink of segments."
  (-write! [out segments]
    "Writes a vector of segments. May block: that is the job's backpressure. Must be idempotent under replay
    when the job needs exactly-once effects (e.g. upserts keyed by segment identity).")
  (-flush! [out]
    "Makes every write so far durable; called at each epoch barrier, before the snapshot that moves the
    inputs past those segments is written.")
  (-close-output! [out] "Flushes and releases; called once."))

(defn invalid-option
  "Throws the invalid-job error a plugin constructor raises for option `key` of `task-map` holding `value`;
  its data names the task under `:task`, as validation errors do."
  [task-map key value problem hint]
  (let [n (:task/name task-map)
        e (t/invalid-ex [:catalog n key] key value problem hint nil)]
    (throw (ex-info (str (ex-message e) " (task " n ")") (assoc (ex-data e) :task n)))))

(defn option
  "The value of `key` in `task-map`, checked with `pred`; throws `invalid-option` naming `what` otherwise. A
  missing option (nil) is reported as missing, with the fix: set it in the task map or inject it through
  `submit-job`'s `:inject`."
  [task-map key pred what]
  (let [v (get task-map key) n (:task/name task-map)]
    (cond (pred v) v
          (nil? v) (invalid-option task-map key v (str "is missing from task " n " (" (:task/plugin task-map) " requires it)")
                                   (str "set " key " to " what " in the task map, or inject it: (submit-job job {:inject {"
                                        n " {" key " ...}}})"))
          :else (invalid-option task-map key v (str "of task " n " is not " what)
                                (str "set " key " to " what)))))
