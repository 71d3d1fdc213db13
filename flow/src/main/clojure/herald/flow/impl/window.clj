(ns herald.flow.impl.window
  "Window state of one task thread: extents per window and group, event time and watermarks, triggers, snapshots."
  (:require [herald.flow.impl.aggregation :as agg]
            [herald.flow.impl.types :as t])
  (:import (java.util ArrayList List)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(def ^:private no-time Long/MIN_VALUE)

(defn- prepare-window
  "Precomputed facts about one window and its triggers; `max-t` is shared by the task's threads."
  [w triggers resolve ^AtomicLong max-t]
  {:window w :id (:window/id w) :type (:window/type w) :agg (agg/aggregation w)
   :range (some-> (:window/range w) t/duration-ms) :slide (some-> (:window/slide w) t/duration-ms)
   :lateness (t/duration-ms (:window/allowed-lateness w 0)) :time-key (:window/time-key w)
   :on-late (some-> (:window/on-late w) resolve)
   :max-t max-t
   :triggers (vec (for [tr triggers :when (= (:window/id w) (:trigger/window-id tr))]
                    {:trigger tr :id (:trigger/id tr) :on (:trigger/on tr) :threshold (:trigger/threshold tr)
                     :period (some-> (:trigger/period tr) t/duration-ms) :discard? (= :discarding (:trigger/refinement tr))
                     :sync (some-> (:trigger/sync tr) resolve) :emit (some-> (:trigger/emit tr) resolve)
                     :last-fire (volatile! (System/currentTimeMillis))}))})

(defn windows-state
  "The window state of thread `worker` (of `parallelism`) of task `task-name`, or nil when the task has no
  window. Each thread keeps its own watermark (the largest event time it saw, minus the allowed lateness):
  it depends only on the segments that thread received, so a replay closes the same extents."
  [job task-name resolve worker parallelism]
  (let [ws (filter #(= task-name (:window/task %)) (:windows job))]
    (when (seq ws)
      {:windows (mapv #(prepare-window % (:triggers job) resolve (AtomicLong. no-time)) ws)
       :extents (volatile! {})
       :worker worker :parallelism parallelism
       :late (AtomicLong.)})))

(defn watermark ^long [w]
  (if (= :global (:type w))
    no-time
    (let [m (.get ^AtomicLong (:max-t w))] (if (= m no-time) no-time (- m (long (:lateness w)))))))

(defn- bounds [w ^long t]
  (case (:type w)
    :global [[no-time Long/MAX_VALUE]]
    :fixed (let [r (long (:range w)) lo (* (Math/floorDiv t r) r)] [[lo (+ lo r)]])
    :sliding (let [r (long (:range w)) s (long (:slide w)) last-start (* (Math/floorDiv t s) s)]
               (for [lo (range last-start (- t r) (- s))] [lo (+ (long lo) r)]))))

(defn- fire!
  "Hands the extent under `k` to trigger `tr` for `event`; emitted segments go to `out`. Returns the extent."
  [w tr event e ^List out]
  (let [{:keys [agg window]} w
        fired {:window/id (:id w) :trigger/id (:id tr) :event event :group (:group e)
               :lower (:lower e) :upper (:upper e)
               :value ((:aggregation/extract agg) window (:state e))}]
    (when-let [f (:sync tr)] (f fired))
    (when-let [f (:emit tr)]
      (let [r (f fired)] (cond (map? r) (.add out r) (nil? r) nil :else (.addAll out ^java.util.Collection (vec r)))))
    (cond-> (update e :dirty disj (:id tr))
      (:discard? tr) (assoc :state ((:aggregation/init agg) window)))))

(defn- add-to-extent [w e seg ^List out]
  (let [{:keys [agg window]} w
        s (:state e)
        e (assoc e :state ((:aggregation/apply-state-update agg) window s ((:aggregation/create-state-update agg) window s seg))
                 :dirty (into (:dirty e) (map :id) (:triggers w)))]
    (reduce (fn [e tr]
              (if (= :segment (:on tr))
                (let [n (inc (long (get-in e [:counts (:id tr)] 0)))]
                  (if (>= n (long (:threshold tr)))
                    (fire! w tr :segment (assoc-in e [:counts (:id tr)] 0) out)
                    (assoc-in e [:counts (:id tr)] n)))
                e))
            e (:triggers w))))

(defn- event-time ^long [w seg]
  (if (= :global (:type w))
    0
    (let [v (get seg (:time-key w))]
      (cond (integer? v) (long v)
            (inst? v) (inst-ms v)
            :else (throw (ex-info (str "Segment has no event time under " (:time-key w) " (found " (pr-str v) ")")
                                  {:type :herald.flow/no-event-time :window/id (:id w) :key (:time-key w) :value v}))))))

(defn add!
  "Aggregates `seg` of `group` into every window of `st`; segments emitted by triggers go to `out`.
  Returns the number of windows that found the segment late."
  [st seg group ^List out]
  (reduce
   (fn [^long late w]
     (let [t (event-time w seg)
           ^AtomicLong mt (:max-t w)]
       (when-not (= :global (:type w)) (.accumulateAndGet mt t (reify java.util.function.LongBinaryOperator (applyAsLong [_ a b] (max a b)))))
       (let [wm (watermark w)
             open (filter (fn [[_ up]] (> (long up) wm)) (bounds w t))]
         (if (empty? open)
           (do (.incrementAndGet ^AtomicLong (:late st))
               (when-let [f (:on-late w)] (f (:window w) seg))
               (inc late))
           (do (doseq [[lo up] open
                       :let [k [(:id w) group lo]
                             e (or (get @(:extents st) k)
                                   {:lower lo :upper up :group group :dirty #{}
                                    :state ((:aggregation/init (:agg w)) (:window w))})]]
                 (vswap! (:extents st) assoc k (add-to-extent w e seg out)))
               late)))))
   0 (:windows st)))

(defn- close-where!
  "Fires the dirty triggers of every extent of window `w` for which `pred` holds, then evicts it."
  [st w pred event ^List out]
  (doseq [[k e] @(:extents st) :when (and (= (:id w) (first k)) (pred e))]
    (reduce (fn [e tr] (if (contains? (:dirty e) (:id tr)) (fire! w tr event e out) e)) e (:triggers w))
    (vswap! (:extents st) dissoc k)))

(defn advance!
  "Closes the extents the watermark has passed and fires due timer triggers; emitted segments go to `out`."
  [st ^long now ^List out]
  (doseq [w (:windows st)]
    (let [wm (watermark w)]
      (when (> wm no-time) (close-where! st w #(<= (long (:upper %)) wm) :watermark out)))
    (doseq [tr (:triggers w)
            :when (and (= :timer (:on tr)) (>= (- now (long @(:last-fire tr))) (long (:period tr))))]
      (vreset! (:last-fire tr) now)
      (doseq [[k e] @(:extents st) :when (and (= (:id w) (first k)) (contains? (:dirty e) (:id tr)))]
        (vswap! (:extents st) assoc k (fire! w tr :timer e out))))))

(defn complete!
  "The job completed: every extent fires its dirty triggers with event :job-completed and is evicted."
  [st ^List out]
  (doseq [w (:windows st)] (close-where! st w (constantly true) :job-completed out)))

(defn snapshot
  "A serializable value of the thread's window state."
  [st]
  {:extents @(:extents st) :worker (:worker st) :parallelism (:parallelism st)
   :max-t (into {} (map (fn [w] [(:id w) (.get ^AtomicLong (:max-t w))])) (:windows st))})

(defn restore!
  "Loads the extents of `snapshots` (of any number of threads) whose group `mine?` accepts. The watermark
  is this thread's own when the parallelism is unchanged, else the smallest of all (nothing turns late)."
  [st snapshots mine?]
  (doseq [{:keys [extents]} snapshots]
    (vswap! (:extents st) into (filter (fn [[[_ group]]] (mine? group))) extents))
  (let [own (first (filter #(and (= (:worker %) (:worker st)) (= (:parallelism %) (:parallelism st))) snapshots))]
    (doseq [w (:windows st)
            :let [ms (keep #(get-in % [:max-t (:id w)]) (if own [own] snapshots))]
            :when (seq ms)]
      (.set ^AtomicLong (:max-t w) (long (apply min ms))))))

(defn late-count ^long [st] (.get ^AtomicLong (:late st)))

(defn new-list ^ArrayList [] (ArrayList.))
