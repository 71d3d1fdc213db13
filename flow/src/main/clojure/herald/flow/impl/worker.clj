(ns herald.flow.impl.worker
  "The thread loop of one stage worker: read (an input or its queue), run the fused tasks, send batches on,
  align epoch barriers and snapshot window state."
  (:require [herald.flow.impl.lifecycle :as lc]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.route :as route]
            [herald.flow.impl.snapshot :as snap]
            [herald.flow.impl.window :as window]
            [herald.flow.spi :as spi])
  (:import (java.util ArrayDeque ArrayList HashSet)
           (java.util.concurrent BlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(deftype Batch [^long src ^ArrayList segs])
(deftype Barrier [^long src ^long epoch])
(deftype Done [^long src])

(def ^:private tick-ms 20)

(defn sender
  "How this worker sends to stage `target`: its queues and, when the target's head is grouped, the group fn."
  [target head-task resolve]
  {:queues (object-array (:queues target))
   :group (when (> (long (:parallelism target)) 1) (route/group-fn head-task resolve))
   :rr (volatile! 0)})

(defn- put! [^BlockingQueue q msg] (.put q msg))

(defn- send! [{:keys [^objects queues group rr]} me ^ArrayList segs]
  (let [p (alength queues)]
    (cond (zero? (.size segs)) nil
          (= 1 p) (put! (aget queues 0) (Batch. me segs))
          group (let [parts (object-array p)]
                  (dotimes [i (.size segs)]
                    (let [s (.get segs i) k (route/partition-of (group s) p)]
                      (when-not (aget parts k) (aset parts k (ArrayList.)))
                      (.add ^ArrayList (aget parts k) s)))
                  (dotimes [k p] (when-let [l (aget parts k)] (put! (aget queues k) (Batch. me l)))))
          :else (let [k (long @rr)] (vreset! rr (mod (inc k) p)) (put! (aget queues k) (Batch. me segs))))))

(defn- broadcast! [senders msg]
  (doseq [{:keys [^objects queues]} senders, q queues] (put! q msg)))

(defn- run-from*
  "Runs `batch` through the runner fns `procs` from index `k0` on and sends what the last emits."
  [^objects procs ^objects sends me k0 ^ArrayList batch]
  (let [n (alength procs) k (long k0)]
    (if (= k n)
      (dotimes [j (alength sends)] (send! (aget sends j) me batch))
      (loop [k k batch batch]
        (when (and (< k n) (pos? (.size batch)))
          (let [^objects outs ((aget procs k) batch)]
            (if (< k (dec n))
              (recur (inc k) (aget outs 0))
              (dotimes [j (alength outs)] (send! (aget sends j) me (aget outs j))))))))))

(defn- run-from [{:keys [procs sends me]} k batch] (run-from* procs sends me k batch))

(defn- chain
  "`(f batch)` running `batch` through all of the worker's runners: `run-from` 0 with the lookups done once."
  [w]
  (let [{:keys [^objects procs ^objects sends me]} w
        n (alength procs)]
    (if (and (= 1 n) (= 1 (alength sends)))
      (let [p (aget procs 0) s (aget sends 0)]
        (fn [^ArrayList batch] (let [^objects outs (p batch)] (send! s me (aget outs 0)))))
      (fn [batch] (run-from* procs sends me 0 batch)))))

(defn- tick!
  "Runs the timers and watermarks of the worker's windowed runners (none: nothing to do)."
  [{:keys [runners senders me] :as w} final?]
  (when (some :windows runners)
    (doseq [[k r] (map-indexed vector runners) :when (:windows r)]
      (let [^objects outs ((:tick r) final?)]
        (if (< (long k) (dec (count runners)))
          (run-from w (inc (long k)) (aget outs 0))
          (dotimes [j (alength outs)] (send! (nth senders j) me (aget outs j))))))))

(defn- snapshot-and-ack!
  "Flushes the stage's outputs, snapshots its windows and input position, and acks `epoch`."
  [{:keys [runners input me coord]} ^long epoch]
  (doseq [r runners :when (:flush! r)] ((:flush! r)))
  ((:ack! coord) epoch me
   {:position (when input (spi/-position input))
    ;; without a data dir an epoch only marks progress (await-caught-up): no state to serialize
    :windows (when (:data-dir coord)
              (let [state (into {} (for [r runners :when (:windows r)] [(:name r) (window/snapshot (:windows r))]))]
               (try (snap/serialize state)
                    (catch java.io.NotSerializableException e
                      (throw (ex-info (str "Window state of " (vec (keys state)) " cannot be snapshotted: "
                                           (.getMessage e) " is not java.io.Serializable")
                                      {:type :herald.flow/unserializable-state :tasks (vec (keys state))} e))))))}))

(defn- input-loop [{:keys [input batch-size batch-timeout coord senders me running input-metrics] :as w}]
  (let [epoch (volatile! (long ((:current-epoch coord))))
        requested-epoch (:requested-epoch coord)
        run-batch (chain w)]
    (loop [last-tick (System/currentTimeMillis)]
      (when @running
        (let [req (long (requested-epoch))]
          (when (> req (long @epoch))
            (vreset! epoch req)
            (snapshot-and-ack! w req)
            (broadcast! senders (Barrier. me req))))
        (let [t0 (System/nanoTime)
              b (spi/-poll! input batch-size batch-timeout)
              now (System/currentTimeMillis)]
          (when (and input-metrics b (pos? (count b)))
            (metrics/record-batch! input-metrics (count b) (count b) (- (System/nanoTime) t0)))
          (if (nil? b)
            (do (tick! w true)
                ((:input-done! coord) me (spi/-position input))
                (broadcast! senders (Done. me)))
            (do (when (pos? (count b)) (run-batch (ArrayList. ^java.util.Collection b)))
                (if (>= (- now last-tick) tick-ms) (do (tick! w false) (recur now)) (recur last-tick)))))))))

(defn- queue-loop
  "Takes messages from the worker's queue until every producer is done. A worker with window state wakes
  every `tick-ms` for its timers and watermarks; one without parks on its queue until a message comes (an
  idle job costs no CPU; `kill!` interrupts it)."
  [{:keys [^BlockingQueue queue producers coord senders me running runners] :as w}]
  (let [run-batch (chain w)
        timed? (boolean (some :windows runners))
        blocked (HashSet.) done (HashSet.) held (ArrayDeque.) pending (ArrayDeque.)
        nprod (count producers) epoch (volatile! 0)
        aligned! (fn []
                   (when (and (pos? (.size blocked)) (>= (+ (.size blocked) (.size done)) nprod))
                     (snapshot-and-ack! w @epoch)
                     (broadcast! senders (Barrier. me @epoch))
                     (.clear blocked)
                     (while (pos? (.size held)) (.addFirst pending (.pollLast held)))))]
    (loop [last-tick (System/currentTimeMillis)]
      (when (and @running (< (.size done) nprod))
        (let [msg (or (.pollFirst pending)
                      (if timed? (.poll queue tick-ms TimeUnit/MILLISECONDS) (.take queue)))
              now (if timed? (System/currentTimeMillis) 0)]
          (cond (nil? msg) nil
                (instance? Batch msg) (let [^Batch b msg]
                                        (if (.contains blocked (.src b)) (.addLast held b) (run-batch (.segs b))))
                (instance? Barrier msg) (let [^Barrier b msg]
                                          (if (.contains blocked (.src b))
                                            (.addLast held b)
                                            (do (.add blocked (.src b)) (vreset! epoch (.epoch b)) (aligned!))))
                (instance? Done msg) (let [^Done d msg]
                                       (if (.contains blocked (.src d))
                                         (.addLast held d)
                                         (do (.add done (.src d)) (aligned!)))))
          (if (and timed? (>= (- now last-tick) tick-ms)) (do (tick! w false) (recur now)) (recur last-tick)))))
    (when (and @running (= (.size done) nprod))
      (tick! w true)
      (broadcast! senders (Done. me)))))

(defn- stop-hooks! [{:keys [lifecycles event task-names]}]
  (doseq [t task-names] (when-let [h (lc/hook lifecycles t :lifecycle/after-task-stop)] (h event {}))))

(defn run-worker
  "The body of a worker thread `w` (see `herald.flow.impl.runtime`); reports its end to the coordinator."
  [{:keys [input outputs coord me lifecycles event task-names runners senders] :as w}]
  (let [closed (volatile! false)
        w (assoc w :procs (object-array (map :process runners)) :sends (object-array senders))]
    (try
      (doseq [t task-names] (when-let [h (lc/hook lifecycles t :lifecycle/before-task-start)] (h event {})))
      (if input (input-loop w) (queue-loop w))
      (vreset! closed true)
      (doseq [o outputs] (spi/-close-output! o))
      (stop-hooks! w)
      ((:worker-done! coord) me nil)
      (catch InterruptedException _ ((:worker-done! coord) me nil))
      (catch Throwable e
        (lc/handle-exception lifecycles task-names event :task e)
        ((:worker-done! coord) me e))
      (finally
        (when-not @closed
          (doseq [o outputs] (try (spi/-close-output! o) (catch Exception _ nil)))
          (try (stop-hooks! w) (catch Exception _ nil)))
        (when input (try (spi/-close-input! input) (catch Exception _ nil)))))))
