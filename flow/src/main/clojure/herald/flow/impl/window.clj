(ns herald.flow.impl.window
  "Window state of one task thread: extents per window and group, event time and watermarks, triggers, snapshots."
  (:require [herald.flow.impl.aggregation :as agg]
            [herald.flow.impl.types :as t])
  (:import (herald.flow.window Extent)
           (java.util HashMap Iterator List)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(def ^:private no-time Long/MIN_VALUE)

(defn- prepare-window
  "Precomputed facts about one window and its triggers, with this thread's mutable state."
  [w triggers resolve]
  (let [trs (vec (for [tr triggers :when (= (:window/id w) (:trigger/window-id tr))] tr))]
    {:window w :id (:window/id w) :type (:window/type w) :agg (agg/aggregation w)
     :range (some-> (:window/range w) t/duration-ms) :slide (some-> (:window/slide w) t/duration-ms)
     :lateness (t/duration-ms (:window/allowed-lateness w 0)) :time-key (:window/time-key w)
     :on-late (some-> (:window/on-late w) resolve)
     :max-t (AtomicLong. no-time)
     :next-close (AtomicLong. Long/MAX_VALUE)
     :groups (HashMap.)
     :all-mask (dec (bit-shift-left 1 (count trs)))
     :triggers (vec (map-indexed
                     (fn [i tr]
                       {:trigger tr :id (:trigger/id tr) :bit (bit-shift-left 1 i) :index i :on (:trigger/on tr)
                        :threshold (:trigger/threshold tr) :period (some-> (:trigger/period tr) t/duration-ms)
                        :discard? (= :discarding (:trigger/refinement tr))
                        :sync (some-> (:trigger/sync tr) resolve) :emit (some-> (:trigger/emit tr) resolve)
                        :last-fire (volatile! (System/currentTimeMillis))})
                     trs))}))

(defn windows-state
  "The window state of thread `worker` (of `parallelism`) of task `task-name`, or nil when the task has no
  window. Each thread keeps its own watermark (the largest event time it saw, minus the allowed lateness):
  it depends only on the segments that thread received, so a replay closes the same extents."
  [job task-name resolve worker parallelism]
  (let [ws (filter #(= task-name (:window/task %)) (:windows job))]
    (when (seq ws)
      {:windows (mapv #(prepare-window % (:triggers job) resolve) ws)
       :worker worker :parallelism parallelism})))

(defn watermark
  "The watermark of prepared window `w` on this thread: largest event time seen minus allowed lateness."
  ^long [w]
  (if (= :global (:type w))
    no-time
    (let [m (.get ^AtomicLong (:max-t w))] (if (= m no-time) no-time (- m (long (:lateness w)))))))

(defn- fire!
  "Hands extent `e` to trigger `tr` for `event`; emitted segments go to `out`."
  [w tr event ^Extent e ^List out]
  (let [{:keys [agg window]} w
        fired {:window/id (:id w) :trigger/id (:id tr) :event event :group (.group e)
               :lower (.lower e) :upper (.upper e)
               :value ((:aggregation/extract agg) window (.state e))}]
    (when-let [f (:sync tr)] (f fired))
    (when-let [f (:emit tr)]
      (let [r (f fired)] (cond (map? r) (.add out r) (nil? r) nil :else (.addAll out ^java.util.Collection (vec r)))))
    (set! (.dirty e) (bit-and-not (.dirty e) (long (:bit tr))))
    (aset ^longs (.counts e) (int (:index tr)) 0)
    (when (:discard? tr) (set! (.state e) ((:aggregation/init agg) window)))))

(defn- extent ^Extent [w group lo up]
  (let [^HashMap groups (:groups w)
        ^HashMap by-lower (or (.get groups group) (let [m (HashMap.)] (.put groups group m) m))]
    (or (.get by-lower lo)
        (let [e (Extent. lo up group ((:aggregation/init (:agg w)) (:window w)) (count (:triggers w)))]
          (.put by-lower lo e)
          (let [^AtomicLong nc (:next-close w)] (when (< up (.get nc)) (.set nc up)))
          e))))

(defn- add-to-extent! [w ^Extent e seg ^List out]
  (let [{:keys [agg window]} w
        s (.state e)]
    (set! (.state e) ((:aggregation/apply-state-update agg) window s ((:aggregation/create-state-update agg) window s seg)))
    (set! (.dirty e) (bit-or (.dirty e) (long (:all-mask w))))
    (doseq [tr (:triggers w) :when (= :segment (:on tr))]
      (let [^longs c (.counts e) i (int (:index tr)) n (inc (aget c i))]
        (aset c i n)
        (when (>= n (long (:threshold tr))) (fire! w tr :segment e out))))))

(defn- event-time ^long [w seg]
  (if (= :global (:type w))
    0
    (let [v (get seg (:time-key w))]
      (cond (integer? v) (long v)
            (inst? v) (inst-ms v)
            :else (throw (ex-info (str "Segment has no event time under " (:time-key w) " (found " (pr-str v) ")")
                                  {:type :herald.flow/no-event-time :window/id (:id w) :key (:time-key w) :value v}))))))

(defn- add-one!
  "Aggregates `seg` into window `w`; returns 1 when it was late, else 0."
  ^long [w seg group ^List out]
  (let [t (event-time w seg)
        ^AtomicLong mt (:max-t w)]
    (when (and (not= :global (:type w)) (> t (.get mt))) (.set mt t))
    (let [wm (watermark w)
          hits (case (:type w)
                 :global (do (add-to-extent! w (extent w group no-time Long/MAX_VALUE) seg out) 1)
                 :fixed (let [r (long (:range w)) lo (* (Math/floorDiv t r) r) up (+ lo r)]
                          (if (> up wm) (do (add-to-extent! w (extent w group lo up) seg out) 1) 0))
                 :sliding (let [r (long (:range w)) s (long (:slide w))]
                            (loop [lo (* (Math/floorDiv t s) s) n 0]
                              (if (> lo (- t r))
                                (let [up (+ lo r)]
                                  (if (> up wm)
                                    (do (add-to-extent! w (extent w group lo up) seg out) (recur (- lo s) (inc n)))
                                    (recur (- lo s) n)))
                                n))))]
      (if (zero? (long hits))
        (do (when-let [f (:on-late w)] (f (:window w) seg)) 1)
        0))))

(defn add!
  "Aggregates `seg` of `group` into every window of `st`; segments emitted by triggers go to `out`.
  Returns how many windows found it late."
  ^long [st seg group ^List out]
  (reduce (fn [^long late w] (+ late (add-one! w seg group out))) 0 (:windows st)))

(defn- close-where!
  "Fires the dirty triggers of every extent of `w` for which `pred` holds, then evicts it; recomputes the next close."
  [w pred event ^List out]
  (let [next-close (volatile! Long/MAX_VALUE)
        ^Iterator groups (.iterator (.values ^HashMap (:groups w)))]
    (while (.hasNext groups)
      (let [^HashMap by-lower (.next groups)
            ^Iterator it (.iterator (.values by-lower))]
        (while (.hasNext it)
          (let [^Extent e (.next it)]
            (if (pred e)
              (do (doseq [tr (:triggers w) :when (not (zero? (bit-and (.dirty e) (long (:bit tr)))))]
                    (fire! w tr event e out))
                  (.remove it))
              (vswap! next-close min (.upper e)))))
        (when (.isEmpty by-lower) (.remove groups))))
    (.set ^AtomicLong (:next-close w) @next-close)))

(defn advance!
  "Closes the extents the watermark has passed and fires due timer triggers; emitted segments go to `out`."
  [st ^long now ^List out]
  (doseq [w (:windows st)]
    (let [wm (watermark w)]
      (when (and (> wm no-time) (>= wm (.get ^AtomicLong (:next-close w))))
        (close-where! w (fn [^Extent e] (<= (.upper e) wm)) :watermark out)))
    (doseq [tr (:triggers w)
            :when (and (= :timer (:on tr)) (>= (- now (long @(:last-fire tr))) (long (:period tr))))]
      (vreset! (:last-fire tr) now)
      (doseq [^HashMap by-lower (.values ^HashMap (:groups w)) ^Extent e (vec (.values by-lower))
              :when (not (zero? (bit-and (.dirty e) (long (:bit tr)))))]
        (fire! w tr :timer e out)))))

(defn complete!
  "The job completed: every extent fires its dirty triggers with event :job-completed and is evicted."
  [st ^List out]
  (doseq [w (:windows st)] (close-where! w (constantly true) :job-completed out)))

(defn snapshot
  "A serializable value of the thread's window state."
  [st]
  {:worker (:worker st) :parallelism (:parallelism st)
   :extents (into {} (for [w (:windows st) [group ^HashMap by-lower] (:groups w) ^Extent e (.values by-lower)]
                       [[(:id w) group (.lower e)]
                        {:lower (.lower e) :upper (.upper e) :group group :state (.state e)
                         :dirty (.dirty e) :counts (vec (.counts e))}]))
   :max-t (into {} (map (fn [w] [(:id w) (.get ^AtomicLong (:max-t w))])) (:windows st))})

(defn restore!
  "Loads the extents of `snapshots` (of any number of threads) whose group `mine?` accepts. The watermark
  is this thread's own when the parallelism is unchanged, else the smallest of all (nothing turns late)."
  [st snapshots mine?]
  (let [by-id (into {} (map (juxt :id identity)) (:windows st))]
    (doseq [{:keys [extents]} snapshots [[wid group] {:keys [lower upper state dirty counts]}] extents
            :let [w (by-id wid)] :when (and w (mine? group))]
      (let [^Extent e (extent w group lower upper)]
        (set! (.state e) state)
        (set! (.dirty e) (long dirty))
        (dotimes [i (min (count counts) (alength ^longs (.counts e)))] (aset ^longs (.counts e) i (long (nth counts i)))))))
  (let [own (first (filter #(and (= (:worker %) (:worker st)) (= (:parallelism %) (:parallelism st))) snapshots))]
    (doseq [w (:windows st)
            :let [ms (keep #(get-in % [:max-t (:id w)]) (if own [own] snapshots))]
            :when (seq ms)]
      (.set ^AtomicLong (:max-t w) (long (apply min ms))))))

