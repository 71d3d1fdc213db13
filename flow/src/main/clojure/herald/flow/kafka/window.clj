(ns herald.flow.kafka.window
  "Windows on Kafka Streams: extents in windowed state stores (fixed -> tumbling, sliding -> hopping, global -> key-value), watermarks, triggers."
  (:require [herald.flow.impl.aggregation :as agg]
            [herald.flow.impl.types :as t]
            [herald.flow.kafka.serde :as serde])
  (:import (java.time Duration)
           (java.util List)
           (org.apache.kafka.streams KeyValue)
           (org.apache.kafka.streams.processor.api ProcessorContext)
           (org.apache.kafka.streams.state KeyValueIterator KeyValueStore Stores WindowStore)))

(set! *warn-on-reflection* true)

(def ^:private no-time Long/MIN_VALUE)

(defn- safe-name [x] (.replaceAll (str (if (keyword? x) (subs (str x) 1) x)) "[^a-zA-Z0-9._-]" "_"))

(defn store-name
  "The state store (and, prefixed by the application id, changelog topic) of window `w` of task `task`."
  [task w]
  (str "herald." (safe-name task) "." (safe-name (:window/id w))))

(defn watermark-store-name
  "The key-value store of the largest event time per window of `task`."
  [task]
  (str "herald." (safe-name task) ".watermarks"))

(defn- retention-ms ^long [w]
  (+ (t/duration-ms (:window/range w)) (t/duration-ms (:window/allowed-lateness w 0))
     (if-let [s (:window/slide w)] (t/duration-ms s) 0)))

(defn store-builders
  "The store builders of the windows of task `task` in validated `job`: one windowed store per fixed or
  sliding window (window size = range; retention = range + lateness + slide: every extent still open is
  younger), one key-value store per global window, and the task's watermark store. `store` is :rocksdb or :in-memory."
  [job task store]
  (let [ws (filter #(= task (:window/task %)) (:windows job))
        kv (fn [n] (Stores/keyValueStoreBuilder (if (= store :in-memory) (Stores/inMemoryKeyValueStore n) (Stores/persistentKeyValueStore n))
                                                serde/store-key serde/state))]
    (when (seq ws)
      (conj (vec (for [w ws :let [n (store-name task w)]]
                   (if (= :global (:window/type w))
                     (kv n)
                     (let [r (Duration/ofMillis (t/duration-ms (:window/range w)))
                           keep (Duration/ofMillis (retention-ms w))]
                       (Stores/windowStoreBuilder (if (= store :in-memory)
                                                    (Stores/inMemoryWindowStore n keep r false)
                                                    (Stores/persistentWindowStore n keep r false))
                                                  serde/store-key serde/state)))))
            (kv (watermark-store-name task))))))

(defn- prepare-window [^ProcessorContext ctx task w triggers resolve ^KeyValueStore marks]
  (let [trs (vec (filter #(= (:window/id w) (:trigger/window-id %)) triggers))
        mt (.get marks (:window/id w))]
    {:window w :id (:window/id w) :type (:window/type w) :agg (agg/aggregation w)
     :store (.getStateStore ctx ^String (store-name task w)) :marks marks
     :range (some-> (:window/range w) t/duration-ms) :slide (some-> (:window/slide w) t/duration-ms)
     :lateness (t/duration-ms (:window/allowed-lateness w 0)) :time-key (:window/time-key w)
     :on-late (some-> (:window/on-late w) resolve)
     :max-t (long-array [(if mt (long mt) no-time)])
     :next-close (long-array [no-time])
     :all-mask (dec (bit-shift-left 1 (count trs)))
     ;; per timer trigger index: the [group lower] of the extents changed since it last fired (`fire-timer!`), or
     ;; nil until its first firing, which reads every extent (those dirty before a restart included)
     :touched (object-array (count trs))
     :triggers (vec (map-indexed (fn [i tr] {:trigger tr :id (:trigger/id tr) :bit (bit-shift-left 1 i) :index i
                                             :on (:trigger/on tr) :threshold (:trigger/threshold tr)
                                             :period (some-> (:trigger/period tr) t/duration-ms)
                                             :discard? (= :discarding (:trigger/refinement tr))
                                             :sync (some-> (:trigger/sync tr) resolve) :emit (some-> (:trigger/emit tr) resolve)})
                                 trs))}))

(defn- global? [w] (= :global (:type w)))

(defn- each-extent!
  "Calls `(f extent)` on every extent of `w` whose lower bound is at most `to` (every extent when `to` is nil,
  and always for a global window)."
  [w to f]
  (let [^KeyValueIterator it (cond (global? w) (.all ^KeyValueStore (:store w))
                                   (nil? to) (.all ^WindowStore (:store w))
                                   :else (.fetchAll ^WindowStore (:store w) 0 (long to)))
        xs (with-open [it it] (loop [acc []] (if (.hasNext it) (recur (conj acc (.value ^KeyValue (.next it)))) acc)))]
    (run! f xs)))

(defn- recompute-next-close! [w]
  (let [m (volatile! Long/MAX_VALUE)]
    (when-not (global? w)
      (each-extent! w nil (fn [e] (vswap! m min (long (:upper e))))))
    (aset ^longs (:next-close w) 0 (long @m))))

(defn windows
  "The windows of `task` for one processor instance (one stream task), reading their stores from `ctx`;
  nil when the task has none. Watermarks come back from the watermark store, so a restart closes the same extents."
  [^ProcessorContext ctx job task resolve]
  (let [ws (filter #(= task (:window/task %)) (:windows job))]
    (when (seq ws)
      (let [marks (.getStateStore ctx ^String (watermark-store-name task))
            prepared (mapv #(prepare-window ctx task % (:triggers job) resolve marks) ws)]
        (run! recompute-next-close! prepared)
        prepared))))

(defn- watermark ^long [w]
  (let [m (aget ^longs (:max-t w) 0)]
    (if (or (global? w) (= m no-time)) no-time (- m (long (:lateness w))))))

(defn- store-key
  "The store key of a group: wrapped, as stores refuse a nil key and an ungrouped task's group is nil."
  [group]
  [group])

(defn- put-extent! [w e]
  (if (global? w)
    (.put ^KeyValueStore (:store w) (store-key (:group e)) e)
    (.put ^WindowStore (:store w) (store-key (:group e)) e (long (:lower e)))))

(defn- delete-extent! [w e]
  (if (global? w)
    (.delete ^KeyValueStore (:store w) (store-key (:group e)))
    (.put ^WindowStore (:store w) (store-key (:group e)) nil (long (:lower e)))))

(defn- fire
  "Hands extent `e` to trigger `tr` for `event` (emitted segments into `out`); returns the extent after firing."
  [w tr event e ^List out]
  (let [{:keys [agg window]} w
        fired {:window/id (:id w) :trigger/id (:id tr) :event event :group (:group e)
               :lower (:lower e) :upper (:upper e) :value ((:aggregation/extract agg) window (:state e))}]
    (when-let [f (:sync tr)] (f fired))
    (when-let [f (:emit tr)]
      (let [r (f fired)] (cond (map? r) (.add out r) (nil? r) nil :else (.addAll out ^java.util.Collection (vec r)))))
    (cond-> (-> e (update :dirty bit-and-not (:bit tr)) (assoc-in [:counts (:index tr)] 0))
      (:discard? tr) (assoc :state ((:aggregation/init agg) window)))))

(defn- extent [w group ^long lo ^long up]
  (or (if (global? w)
        (.get ^KeyValueStore (:store w) (store-key group))
        (.fetch ^WindowStore (:store w) (store-key group) lo))
      (do (when (< up (aget ^longs (:next-close w) 0)) (aset ^longs (:next-close w) 0 up))
          {:lower lo :upper up :group group :state ((:aggregation/init (:agg w)) (:window w)) :dirty 0
           :counts (vec (repeat (count (:triggers w)) 0))})))

(defn- add-to-extent! [w group lo up seg ^List out]
  (let [{:keys [agg window]} w
        e (extent w group lo up)
        s (:state e)
        e (assoc e :state ((:aggregation/apply-state-update agg) window s ((:aggregation/create-state-update agg) window s seg))
                 :dirty (bit-or (long (:dirty e)) (long (:all-mask w))))
        e (reduce (fn [e tr]
                    (if (= :segment (:on tr))
                      (let [e (update-in e [:counts (:index tr)] inc)]
                        (if (>= (long (get-in e [:counts (:index tr)])) (long (:threshold tr))) (fire w tr :segment e out) e))
                      e))
                  e (:triggers w))]
    (put-extent! w e)
    (let [^objects touched (:touched w)]
      (dotimes [i (alength touched)]
        (when-let [^java.util.Set ks (aget touched i)] (.add ks [group lo]))))))

(defn- event-time ^long [w seg]
  (if (global? w)
    0
    (let [v (get seg (:time-key w))]
      (cond (integer? v) (long v)
            (inst? v) (inst-ms v)
            :else (throw (ex-info (str "Segment has no event time under " (:time-key w) " (found " (pr-str v) ")")
                                  {:type :herald.flow/no-event-time :window/id (:id w) :key (:time-key w) :value v}))))))

(defn- lowers
  "The lower bounds of the extents event time `t` falls in (before lateness)."
  [w ^long t]
  (case (:type w)
    :global [no-time]
    :fixed (let [r (long (:range w))] [(* (Math/floorDiv t r) r)])
    :sliding (let [r (long (:range w)) s (long (:slide w))]
               (loop [lo (* (Math/floorDiv t s) s) acc []]
                 (if (> lo (- t r)) (recur (- lo s) (conj acc lo)) acc)))))

(defn- close-passed!
  "Closes the extents of `w` the watermark has passed: their dirty triggers fire with :watermark and they
  leave the store."
  [w ^List out]
  (let [wm (watermark w)]
    (when (and (not (global? w)) (> wm no-time) (>= wm (aget ^longs (:next-close w) 0)))
      (each-extent! w (- wm (long (:range w)))
                    (fn [e]
                      (reduce (fn [e tr] (if (zero? (bit-and (long (:dirty e)) (long (:bit tr)))) e (fire w tr :watermark e out)))
                              e (:triggers w))
                      (delete-extent! w e)))
      (recompute-next-close! w))))

(defn- add-one!
  "Aggregates `seg` into window `w`; returns 1 when it was late, else 0. When the segment moves the
  watermark, the extents it passes close first: a window store expires what lies a retention period
  behind its newest put, and they must fire before that."
  ^long [w seg group ^List out]
  (let [t (event-time w seg)
        los (lowers w t)]
    (when (and (not (global? w)) (some neg? los))
      (throw (ex-info (str "Segment's event time " t " puts it in an extent starting before 0, which a window store cannot hold")
                      {:type :herald.flow/negative-extent :window/id (:id w) :key (:time-key w) :value t})))
    (when (and (not (global? w)) (> t (aget ^longs (:max-t w) 0)))
      (aset ^longs (:max-t w) 0 t)
      (.put ^KeyValueStore (:marks w) (:id w) t)
      (close-passed! w out))
    (let [wm (watermark w)
          r (long (or (:range w) 0))
          hits (reduce (fn [^long n ^long lo]
                         (let [up (if (global? w) Long/MAX_VALUE (+ lo r))]
                           (if (> up wm) (do (add-to-extent! w group lo up seg out) (inc n)) n)))
                       0 los)]
      (if (zero? (long hits))
        (do (when-let [f (:on-late w)] (f (:window w) seg)) 1)
        0))))

(defn add!
  "Aggregates `seg` of `group` into every window of `ws`; trigger emissions go to `out`. Returns how many
  windows found it late."
  ^long [ws seg group ^List out]
  (reduce (fn [^long late w] (+ late (add-one! w seg group out))) 0 ws))

(defn advance!
  "Closes the extents the watermark has passed (see `close-passed!`)."
  [ws ^List out]
  (doseq [w ws] (close-passed! w out)))

(defn timer-triggers
  "[window trigger] for every :timer trigger of `ws`, to schedule as wall-clock punctuators."
  [ws]
  (for [w ws tr (:triggers w) :when (= :timer (:on tr))] [w tr]))

(defn fire-timer!
  "Fires timer trigger `tr` of window `w` for every extent that changed since it last fired. Only the extents
  added to since its last firing are read (`:touched`): reading every extent of the store decoded each one's
  state on every period whether it had changed or not (the feed's per-minute job: an HdrHistogram per minute x
  entity x operation, five times a second, while each changes about once a second). The first firing after a
  start reads them all."
  [w tr ^List out]
  (let [^objects touched (:touched w)
        i (int (:index tr))
        ks (aget touched i)
        one! (fn [e] (when-not (zero? (bit-and (long (:dirty e)) (long (:bit tr))))
                       (put-extent! w (fire w tr :timer e out))))]
    (aset touched i (java.util.HashSet.))
    (if (nil? ks)
      (each-extent! w nil one!)
      (doseq [[group lo] (sort-by second ks)
              :let [e (if (global? w)
                        (.get ^KeyValueStore (:store w) (store-key group))
                        (.fetch ^WindowStore (:store w) (store-key group) (long lo)))]
              :when e]
        (one! e)))))
