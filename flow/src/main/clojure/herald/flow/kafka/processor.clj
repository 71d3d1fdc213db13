(ns herald.flow.kafka.processor
  "One task of a job as a Kafka Streams processor: the same task fn, flow conditions, windows and lifecycle hooks, a record at a time (a batch of 1)."
  (:require [herald.flow.impl.lifecycle :as lc]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.retry :as retry]
            [herald.flow.impl.route :as route]
            [herald.flow.kafka.output :as output]
            [herald.flow.kafka.serde :as serde]
            [herald.flow.kafka.window :as window])
  (:import (java.time Duration)
           (java.util ArrayList List Map)
           (org.apache.kafka.streams.processor PunctuationType Punctuator)
           (org.apache.kafka.streams.processor.api Processor ProcessorContext ProcessorSupplier Record)))

(set! *warn-on-reflection* true)

(defn- add-results! [r ^List emitted]
  (cond (map? r) (.add emitted r)
        (nil? r) nil
        (sequential? r) (.addAll emitted ^java.util.Collection (if (instance? java.util.Collection r) r (vec r)))
        :else (throw (ex-info (str "Task fn returned " (pr-str (type r)) ", not a map, a sequential collection or nil")
                              {:type :herald.flow/bad-result :value r}))))

(defn- caller [f params]
  (if (seq params) (fn [seg] (apply f (conj params seg))) f))

(defn- hook!
  "Calls hook `h` (from `lc/hook`) with `extra`; an exception goes to the handle-exception hooks and is
  rethrown, which fails the Kafka Streams application (and so the job), as in-process."
  [c h extra]
  (when h
    (try (h (:event c) extra)
         (catch Throwable e
           (lc/handle-exception (:lifecycles c) [(:tname c)] (:event c) :task e)
           (throw e)))))

(defn- report!
  "Hands `{:task :segment :exception}` to the job's `:on-error` on this stream thread, so that the record's offset
  commits only after it returned (a dead letter acknowledged first). Should it throw (a dead-letter topic that
  cannot be written), it is called again under `retry/on-error-policy` (one log line when it starts failing, one
  when it works again); past half of max.poll.interval.ms the thread gives its tasks back
  (`:herald.flow/output-retry-pending`) and its successor reads the record again from the committed offsets."
  [c seg e]
  (retry/call! (:err-policy c) (:err-state c) (:budget c)
               #((:on-error c) {:task (:tname c) :segment seg :exception e})))

(defn- error! [c seg e]
  (metrics/error! (:part c))
  (report! c seg e))

(defn- route!
  "Routes `seg` by the task's flow conditions through `add!` (to every target when there are none). The
  targets are chosen first: a predicate that throws makes the segment an error, while `add!` runs the
  downstream processors on this thread and their failures must not be taken for this task's."
  [c seg add!]
  (let [hits (ArrayList.)]
    (when (try (route/route-normal (:normal c) (:ntargets c) seg (fn [i _] (.add hits i))) true
               (catch Exception e (error! c seg e) false))
      (doseq [i hits] (add! i seg)))))

(defn- emit!
  "Applies the task fn to `seg`; what it emits goes to the windows and (unless :reduce) downstream."
  [c seg add!]
  (let [^ArrayList emitted (ArrayList.) ^ArrayList routed (ArrayList.)
        ok? (try (if (:identity? c) (.add emitted seg) (add-results! ((:f c) seg) emitted)) true
                 (catch Exception e
                   (metrics/error! (:part c))
                   (when-not (route/route-thrown (:tname c) (:thrown c) seg e add!)
                     (report! c seg e))
                   false))]
    (when ok?
      (doseq [r emitted]
        (when-let [ws (:windows c)]
          (try (metrics/late! (:part c) (window/add! ws r ((:wgroup c) r) routed))
               (catch Exception e (error! c r e))))
        (when-not (:reduce? c) (.add routed r))))
    (when-let [ws (:windows c)] (window/advance! ws routed))
    (doseq [r routed] (route! c r add!))))

(defn- adder
  "The `(add! target-index segment)` of one record: forwards to that target's child node with its key."
  [c ^long ts ^longs n-out]
  (let [^ProcessorContext ctx (:ctx c) children (:children c) key-fns (:key-fns c) sinks (:sink-parts c)]
    (fn [^long i seg]
      (let [kf (nth key-fns i)]
        (aset n-out 0 (inc (aget n-out 0)))
        ;; an output is a sink node: its figures are counted here, by the task feeding it
        (when-let [p (nth sinks i)] (metrics/record-batch! p 1 1 -1))
        (.forward ctx (Record. (when kf (kf seg)) seg ts) ^String (nth children i))))))

(defn- process! [c ^Record record]
  (let [seg (.value record)
        n-out (long-array 1)
        t0 (System/nanoTime)]
    (cond
      (serde/undecodable? seg)
      (error! c nil (ex-info (str "Undecodable record on the input topic of " (:tname c))
                             {:type :herald.flow/undecodable :task (:tname c) :bytes (:bytes seg)} (:error seg)))
      (not (map? seg))
      (error! c seg (ex-info (str "A record on the input topic of " (:tname c) " is " (pr-str (type seg)) ", not a map")
                             {:type :herald.flow/not-a-segment :task (:tname c) :value seg}))
      :else
      (let [add! (adder c (.timestamp record) n-out)]
        (hook! c (:before c) {:batch [seg]})
        (emit! c seg add!)
        (hook! c (:after c) {:batch [seg] :results (aget n-out 0)})))
    (metrics/record-batch! (:part c) 1 (aget n-out 0) (- (System/nanoTime) t0))))

(defn- schedule-timers! [c]
  (doseq [[w tr] (window/timer-triggers (:windows c))]
    (.schedule ^ProcessorContext (:ctx c) (Duration/ofMillis (long (:period tr))) PunctuationType/WALL_CLOCK_TIME
               (reify Punctuator
                 (punctuate [_ ts]
                   (let [out (ArrayList.) add! (adder c ts (long-array 1))]
                     (window/fire-timer! w tr out)
                     (doseq [r out] (route! c r add!))))))))

(defn- context
  "What the processor of task `task` needs once it knows its ProcessorContext."
  [{:keys [task targets job resolve metrics lifecycles ^Map error-states] :as spec} ^ProcessorContext ctx]
  (let [tname (:task/name task) ttype (:task/type task)
        {:keys [normal thrown]} (route/conditions job tname targets resolve)]
    (assoc spec
           :ctx ctx :tname tname :ntargets (count targets) :normal normal :thrown thrown
           :err-policy (assoc (retry/on-error-policy tname (:job/name job)) :stop? (:stop? spec))
           ;; per stream task (partition), kept for its total (`:on-error-failures`); its run ends when it closes
           :err-state (.computeIfAbsent error-states [tname (str (.taskId ctx))]
                                        (reify java.util.function.Function (apply [_ _] (retry/state))))
           :budget (output/poll-budget-ms ctx)
           :f (caller (resolve (:task/fn task :clojure.core/identity)) (:task/params task))
           :identity? (or (= ttype :input) (and (= ttype :reduce) (nil? (:task/fn task))))
           :reduce? (= ttype :reduce)
           :wgroup (or (route/group-fn task resolve) (constantly nil))
           :windows (window/windows ctx job tname resolve)
           :part (metrics/part (get metrics tname))
           :sink-parts (mapv #(when (contains? (:sink-tasks spec) %) (metrics/part (get metrics %))) targets)
           :event (volatile! {:job/name (:job/name job) :task/names [tname] :worker (.partition (.taskId ctx))})
           :before (lc/hook lifecycles tname :lifecycle/before-batch)
           :after (lc/hook lifecycles tname :lifecycle/after-batch))))

(defn supplier
  "A ProcessorSupplier of the processor of one task. `spec`: `:task` (the task map), `:targets` (its
  downstream task names, in workflow order), `:children` (the node each target is reached through),
  `:key-fns` (per target: nil or a fn of the segment giving the record key), `:sink-tasks` (the output
  tasks that are sink nodes, counted here), `:job`, `:resolve`,
  `:on-error` (called on the stream thread and retried while it throws, see `report!`), `:error-states` (a
  ConcurrentHashMap shared by the application's threads), `:stop?` (a fn: true once the application closes,
  when the retries stop), `:metrics` (task name -> task metrics) and
  `:lifecycles` (compiled)."
  ^ProcessorSupplier [spec]
  (reify ProcessorSupplier
    (get [_]
      (let [state (volatile! nil)]
        (reify Processor
          (init [_ ctx]
            (let [c (context spec ctx)]
              (vreset! state c)
              (hook! c (lc/hook (:lifecycles c) (:tname c) :lifecycle/before-task-start) {})
              (schedule-timers! c)))
          (process [_ record] (process! @state record))
          (close [_]
            (when-let [c @state]
              ;; a stream task closes while its :on-error fails only when the thread gave it back (the budget, or
              ;; the thread's end): the run ends here, else `:on-error-failing?` stayed true for ever once the
              ;; record passed when read again (a transient task error) or the task moved to another instance
              (retry/end-run! (:err-state c))
              (hook! c (lc/hook (:lifecycles c) (:tname c) :lifecycle/after-task-stop) {}))))))))
