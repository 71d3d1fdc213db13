(ns herald.flow.impl.coordinator
  "The epoch coordinator of a running job: asks inputs for barriers, gathers every worker's ack, writes
  snapshots, samples metrics, and tracks the job's end (completed, killed or failed)."
  (:require [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.snapshot :as snap])
  (:import (java.util.concurrent ConcurrentHashMap LinkedBlockingQueue TimeUnit)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn- write-snapshot! [{:keys [data-dir job status]} epoch acks final-positions]
  (let [positions (into (or final-positions {})
                        (for [[_ a] acks :when (:input-task a)] [(:input-task a) (:position a)]))
        s {:epoch epoch :job/name (:job/name job) :at (System/currentTimeMillis) :positions positions
           :workers (into {} (for [[me a] acks] [me (select-keys a [:windows])]))}]
    (snap/write! data-dir s)
    (swap! status assoc :last-snapshot {:epoch epoch :at (:at s)})))

(def ^:private sample-ms 1000)

(defn- wait-ms
  "How long the coordinator may park before its next real deadline: the next metrics sample and, while a
  snapshotting job's inputs are live, the next epoch barrier (or the give-up time of one still unacked)."
  [{:keys [interval-ms data-dir inputs-live]} now last-epoch-at last-sample written-all?]
  (let [sample-at (+ (long last-sample) (long sample-ms))
        epoch-at (if (and data-dir @inputs-live)
                   (+ (long last-epoch-at) (* (if written-all? 1 10) (long interval-ms)))
                   Long/MAX_VALUE)]
    (max 1 (- (min sample-at (long epoch-at)) (long now)))))

(defn- loop!
  "The coordinator thread: requests epochs when due, writes the snapshots of completed ones, samples metrics.
  It parks on the queue of completed epochs until one comes or the next deadline (`wait-ms`) is due."
  [{:keys [interval-ms data-dir metrics requested ready done status inputs-live] :as c}]
  (let [^AtomicLong requested requested ^LinkedBlockingQueue ready ready]
    (loop [last-epoch-at (System/currentTimeMillis) last-sample 0]
      (when-not (realized? done)
        (let [now (System/currentTimeMillis)
              written (long (get-in @status [:last-snapshot :epoch] 0))
              epoch-due? (and data-dir @inputs-live (>= (- now (long last-epoch-at)) (long interval-ms))
                              (or (>= written (.get requested)) (>= (- now (long last-epoch-at)) (* 10 (long interval-ms)))))
              _ (when epoch-due? ((:request-epoch! c) (>= (- now (long last-epoch-at)) (* 10 (long interval-ms)))))
              sample? (>= (- now (long last-sample)) (long sample-ms))
              _ (when sample? (run! metrics/sample! (vals metrics)))
              last-epoch-at (if epoch-due? now last-epoch-at)
              last-sample (if sample? now last-sample)
              x (.poll ready (wait-ms c now last-epoch-at last-sample (>= written (.get requested))) TimeUnit/MILLISECONDS)]
          (when (and data-dir (vector? x))
            (let [[epoch acks] x]
              (try (write-snapshot! c epoch acks nil)
                   (catch Exception e (swap! status assoc :snapshot-error (.toString e))))))
          (recur last-epoch-at last-sample))))))

(defn coordinator
  "The coordinator of a job: a map of fns the workers call and the state `herald.flow` reads."
  [{:keys [workers restored running data-dir on-end] :as opts}]
  (let [nworkers (count workers)
        base (long (or (:epoch restored) 0))
        requested (AtomicLong. base)
        acks (ConcurrentHashMap.)
        ready (LinkedBlockingQueue.)
        remaining (AtomicLong. nworkers)
        final-positions (atom {})
        status (atom {:status :running :restored-epoch (:epoch restored) :started-at (System/currentTimeMillis)
                      :last-snapshot (when restored {:epoch base :at (:at restored)})})
        done (promise)
        threads (atom [])
        completed (AtomicLong. base)
        finished (ConcurrentHashMap.)
        c (assoc opts :requested requested :ready ready :status status :done done
                 :inputs-live (volatile! true) :threads threads
                 :request-epoch! (fn [force?]
                                   ;; one epoch at a time (inputs must all see the same one), unless forced
                                   ;; past a stuck one; returns the epoch requested, or nil when one is in flight
                                   (if force?
                                     (.incrementAndGet requested)
                                     (let [r (.get requested)]
                                       (when (and (>= (.get completed) r) (.compareAndSet requested r (inc r))) (inc r))))))
        input-task (into {} (for [w workers :when (:input w)] [(:me w) (first (:task-names w))]))
        try-complete! (fn [epoch]
                        ;; an epoch is complete when every worker acked it or had finished (a finished worker
                        ;; has handed on everything it read); it and any older, never-completed one are done with
                        (when-let [^ConcurrentHashMap m (.get acks epoch)]
                          (when (>= (+ (.size m) (count (remove #(.containsKey m %) (keys finished)))) nworkers)
                            (.removeIf (.keySet acks) (reify java.util.function.Predicate (test [_ e] (<= (long e) (long epoch)))))
                            (loop [] (let [v (.get completed)] (when (and (< v (long epoch)) (not (.compareAndSet completed v epoch))) (recur))))
                            (when data-dir (.put ready [epoch (into {} m)])))))
        stop! (fn [st]
                (vreset! running false)
                (swap! status (fn [s] (if (= :running (:status s)) (merge s st) s)))
                (doseq [^Thread t @threads] (.interrupt t)))]
    (assoc c
           :current-epoch (fn [] base)
           :requested-epoch (fn [] (.get requested))
           :ack! (fn [epoch me data]
                   (let [m (.computeIfAbsent acks epoch (reify java.util.function.Function (apply [_ _] (ConcurrentHashMap.))))]
                     (.put ^ConcurrentHashMap m me (assoc data :input-task (input-task me)))
                     (try-complete! epoch)))
           :completed-epoch (fn [] (.get completed))
           :input-finished? (fn [task] (contains? @final-positions task))
           :input-done! (fn [me pos]
                          (vreset! (:inputs-live c) false)
                          (swap! final-positions assoc (input-task me) pos))
           :worker-done! (fn [me err]
                           (when err (stop! {:status :failed :error err}))
                           (.put finished me true)
                           (run! try-complete! (sort (keys acks)))
                           (when (zero? (.decrementAndGet remaining))
                             (when (and data-dir (= :running (:status @status)))
                               (try (write-snapshot! c (inc (.get requested)) {} @final-positions)
                                    (catch Exception e (swap! status assoc :snapshot-error (.toString e)))))
                             (swap! status (fn [s] (if (= :running (:status s)) (assoc s :status :completed) s)))
                             (when on-end (on-end))
                             (deliver done @status)
                             (.offer ready ::wake)))
           :start! (fn [ts]
                     (reset! threads ts)
                     (doto (Thread. ^Runnable (fn [] (loop! c)) "herald-flow-coordinator") (.setDaemon true) (.start)))
           :checkpoint! (fn [^long timeout-ms]
                          (let [e (.incrementAndGet requested)
                                _ (.offer ready ::wake)
                                deadline (+ (System/currentTimeMillis) timeout-ms)]
                            (loop []
                              (cond (>= (long (get-in @status [:last-snapshot :epoch] 0)) e) true
                                    (or (realized? done) (not @(:inputs-live c))
                                        (> (System/currentTimeMillis) deadline)) false
                                    :else (do (Thread/sleep 5) (recur))))))
           :kill! (fn []
                    (stop! {:status :killed})
                    (doseq [^Thread t @threads] (.join t 5000))
                    (when (and on-end (not (realized? done))) (on-end))
                    (deliver done @status)
                    (.offer ready ::wake)))))
