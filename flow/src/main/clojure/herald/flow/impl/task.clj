(ns herald.flow.impl.task
  "One task on one thread: applies its fn to a batch, aggregates its windows, routes what it emits, times it all."
  (:require [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.route :as route]
            [herald.flow.impl.lifecycle :as lc]
            [herald.flow.impl.retry :as retry]
            [herald.flow.impl.window :as window]
            [herald.flow.spi :as spi])
  (:import (java.util ArrayList List)))

(set! *warn-on-reflection* true)

(defn- caller [f params]
  (if (seq params)
    (fn [seg] (apply f (conj params seg)))
    f))

(defn- add-results! [r ^List emitted]
  (cond (map? r) (.add emitted r)
        (nil? r) nil
        (sequential? r) (.addAll emitted ^java.util.Collection (if (instance? java.util.Collection r) r (vec r)))
        :else (throw (ex-info (str "Task fn returned " (pr-str (type r)) ", not a map, a sequential collection or nil")
                              {:type :herald.flow/bad-result :value r}))))

(defn- route-safely!
  "Routes `seg` by the flow conditions; a predicate that throws makes the segment an error, not a crash."
  [normal ntargets seg add! on-error m tname]
  (try (if (zero? (count normal))
         (let [n (long ntargets)] (loop [i 0] (when (< i n) (add! i seg) (recur (inc i)))))
         (route/route-normal normal ntargets seg add!))
       (catch Exception e
         (metrics/error! m)
         (on-error {:task tname :segment seg :exception e}))))

(defn- direct!
  "The batch loop of a task with one target, no flow conditions and no window: results go straight to `out`."
  [f identity? thrown tname on-error m ^ArrayList batch ^ArrayList out add!]
  (dotimes [i (.size batch)]
    (let [seg (.get batch i)]
      (if identity?
        (.add out seg)
        (try (add-results! (f seg) out)
             (catch Exception e
               (metrics/error! m)
               (when-not (route/route-thrown tname thrown seg e add!)
                 (on-error {:task tname :segment seg :exception e}))))))))

(defn- lists ^objects [^long n ^long capacity]
  (let [a (object-array n)] (dotimes [i n] (aset a i (ArrayList. (int capacity)))) a))

(defn- route-all!
  "Routes every segment in the context's `routed` list by the flow conditions, then empties it."
  [{:keys [^ArrayList routed normal ntargets on-error m tname]} add!]
  (dotimes [j (.size routed)] (route-safely! normal ntargets (.get routed j) add! on-error m tname))
  (.clear routed))

(defn- apply-fn!
  "Applies the task fn to `seg`, its results into `emitted`; a throw is routed or reported. True when it ran."
  [{:keys [f identity? ^ArrayList emitted m thrown tname on-error]} seg add!]
  (.clear emitted)
  (try (if identity? (.add emitted seg) (add-results! (f seg) emitted)) true
       (catch Exception e
         (metrics/error! m)
         (when-not (route/route-thrown tname thrown seg e add!)
           (on-error {:task tname :segment seg :exception e}))
         false)))

(defn- aggregate!
  "Hands each emitted segment to the windows (their emissions into `routed`) and, unless reduce, to `routed`."
  [{:keys [^ArrayList emitted ^ArrayList routed wstate wgroup reduce? m on-error tname]}]
  (dotimes [j (.size emitted)]
    (let [r (.get emitted j)]
      (when wstate
        (try (metrics/late! m (window/add! wstate r (wgroup r) routed))
             (catch Exception e
               (metrics/error! m)
               (on-error {:task tname :segment r :exception e}))))
      (when-not reduce? (.add routed r)))))

(defn- general!
  "The batch loop of a task with several targets, flow conditions or windows."
  [{:keys [wstate ^ArrayList routed] :as c} ^ArrayList batch add!]
  (dotimes [i (.size batch)]
    (when (apply-fn! c (.get batch i) add!)
      (aggregate! c)
      (route-all! c add!)))
  (when wstate
    (window/advance! wstate (System/currentTimeMillis) routed)
    (route-all! c add!)))

(defn- context
  "What a task's batch loop needs, computed once per thread."
  [task targets {:keys [job resolve on-error metrics worker parallelism]}]
  (let [tname (:task/name task) ttype (:task/type task)
        {:keys [normal thrown]} (route/conditions job tname targets resolve)
        wstate (window/windows-state job tname resolve worker parallelism)]
    {:tname tname :ttype ttype :ntargets (count targets)
     :f (caller (resolve (:task/fn task :clojure.core/identity)) (:task/params task))
     :identity? (or (= ttype :input) (and (= ttype :reduce) (nil? (:task/fn task))))
     :normal normal :thrown thrown :wstate wstate
     :wgroup (or (route/group-fn task resolve) (constantly nil))
     :reduce? (= ttype :reduce) :output? (= ttype :output)
     :direct? (and (nil? wstate) (empty? normal) (= 1 (count targets)) (not= ttype :output))
     :m (metrics/part (get metrics tname)) :on-error on-error
     :emitted (ArrayList.) :routed (ArrayList.)}))

(defn runner
  "The batch fn of `task` on one thread: `(process ^ArrayList batch) -> object array of ArrayLists, one per
  target of `targets` (task names)`. `ctx` holds :job, :resolve, :on-error, :metrics, :lifecycles, :output,
  :event, :worker (this thread's index), :parallelism and :retry-states (task name -> atom of the retry states
  of its threads). An output's runner also has `:flush!`: its plugin's `-flush!` under the task's retries."
  [task targets {:keys [lifecycles output event job retry-states] :as ctx}]
  (let [{:keys [tname ttype ntargets f identity? thrown wstate output? direct? m on-error ^ArrayList routed] :as c}
        (context task targets ctx)
        policy (retry/policy task (:job/name job))
        rstate (when output (let [st (retry/state)] (some-> (get retry-states tname) (swap! conj st)) st))
        before (lc/hook lifecycles tname :lifecycle/before-batch)
        after (lc/hook lifecycles tname :lifecycle/after-batch)
        sample (long-array [-1])]
    {:name tname :type ttype :windows wstate
     :flush! (when output (fn [] (retry/call! policy rstate #(spi/-flush! output))))
     :process
     (fn process [^ArrayList batch]
       (.clear routed)
       (let [;; small batches are timed one in eight (unbiased quantiles, a fraction of the clock reads)
             timed? (or (>= (.size batch) 16)
                        (zero? (bit-and (aset sample 0 (inc (aget sample 0))) 7)))
             t0 (if timed? (System/nanoTime) 0)
             ^objects outs (lists ntargets (.size batch))
             add! (fn [^long i seg] (.add ^ArrayList (aget outs i) seg))]
         (when before (before event {:batch batch}))
         (cond output? (retry/write! policy rstate nil #(spi/-write! output %)
                                     (fn [seg e info] (metrics/error! m) (on-error (merge {:task tname :segment seg :exception e} info)))
                                     (vec batch))
               direct? (direct! f identity? thrown tname on-error m batch (aget outs 0) add!)
               :else (general! c batch add!))
         (let [n-out (areduce outs i acc 0 (+ acc (.size ^ArrayList (aget outs i))))]
           (when after (after event {:batch batch :results outs}))
           (metrics/record-batch! m (.size batch) n-out (if timed? (- (System/nanoTime) t0) -1)))
         outs))
     :tick
     (fn tick [final?]
       (let [^objects outs (lists ntargets 4)]
         (.clear routed)
         (when wstate
           (if final?
             (window/complete! wstate routed)
             (window/advance! wstate (System/currentTimeMillis) routed))
           (route-all! c (fn [^long i seg] (.add ^ArrayList (aget outs i) seg))))
         outs))}))
