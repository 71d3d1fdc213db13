(ns herald.flow.impl.runtime
  "The in-process runtime: builds the workers of a validated job, restores the last snapshot, runs the
  threads and the epoch coordinator, and answers for the job's handle."
  (:require [herald.flow.impl.coordinator :as coordinator]
            [herald.flow.impl.lifecycle :as lc]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.plan :as plan]
            [herald.flow.impl.route :as route]
            [herald.flow.impl.snapshot :as snap]
            [herald.flow.impl.task :as task]
            [herald.flow.impl.window :as window]
            [herald.flow.impl.worker :as worker]
            [herald.flow.spi :as spi]))

(set! *warn-on-reflection* true)

(defn- restored-windows
  "Task name -> vector of the window snapshots of every thread, from snapshot `s`."
  [s]
  (apply merge-with into {}
         (for [[_ {:keys [windows]}] (:workers s) :when windows
               [tname ws] (snap/deserialize windows)]
           {tname [ws]})))

(defn- close-plugins!
  "Closes, quietly, every plugin in `opened` (a list of [:input x] and [:output x]), the last opened first."
  [^java.util.List opened]
  (doseq [[kind p] (reverse (vec opened))]
    (try (if (= :input kind) (spi/-close-input! p) (spi/-close-output! p)) (catch Exception _ nil))))

(defn- build-worker*
  "The worker map of thread `i` of stage `stage`, its plugins constructed (each added to `opened` as it is
  built) and its state restored."
  [{:keys [job tasks stages resolve restored] :as ctx} stage ^long i ^java.util.List opened]
  (let [names (:tasks stage)
        head (tasks (first names))
        input (when (= :input (:task/type head))
                (doto ((resolve (:task/plugin head)) head) (->> (vector :input) (.add opened))))
        event (volatile! {:job/name (:job/name job) :task/names names :worker i})
        runner (fn [tname targets]
                 (let [t (tasks tname)
                       out (when (= :output (:task/type t))
                             (doto ((resolve (:task/plugin t)) t) (->> (vector :output) (.add opened))))]
                   (assoc (task/runner t targets (assoc ctx :output out :event event :worker i :parallelism (:parallelism stage)))
                          :output out)))
        ;; an input without flow conditions hands its batches straight to the next task (no pass-through copy)
        direct? (and input (not-any? #(= (:task/name head) (:flow/from %)) (:flow-conditions job)))
        runners (vec (for [[k tname] (map-indexed vector names) :when (not (and direct? (zero? k)))]
                       (runner tname (if (= k (dec (count names))) (:target-tasks stage) [(nth names (inc k))]))))
        p (:parallelism stage)]
    (when (and input restored)
      (when-let [pos (get-in restored [:positions (:task/name head)])] (spi/-seek! input pos)))
    (doseq [r runners :when (:windows r)]
      (window/restore! (:windows r) (get-in ctx [:restored-windows (:name r)])
                       (fn [g] (= i (route/partition-of g p)))))
    {:me (nth (:worker-ids stage) i) :stage (:id stage) :task-names names
     :input input :input-metrics (when direct? (metrics/part (get-in ctx [:metrics (:task/name head)])))
     :batch-size (:task/batch-size head) :batch-timeout (:task/batch-timeout-ms head)
     :runners runners :outputs (keep :output runners)
     :senders (mapv (fn [sid tname] (worker/sender (nth stages sid) (tasks tname) resolve))
                    (:targets stage) (:target-tasks stage))
     :queue (when-not input (nth (:queues stage) i))
     :producers (:producers stage)
     :lifecycles (:lifecycles ctx) :event event}))

(defn- build-worker
  "`build-worker*`; when any part of it throws, the plugins it had already built are closed before the
  exception goes on (an input holding a file is not leaked by a later output constructor's failure)."
  [ctx stage i]
  (let [opened (java.util.ArrayList.)]
    (try (build-worker* ctx stage i opened)
         (catch Throwable e (close-plugins! opened) (throw e)))))

(defn- close-all! [workers]
  (doseq [w workers]
    (doseq [o (:outputs w)] (try (spi/-close-output! o) (catch Exception _ nil)))
    (when-let [in (:input w)] (try (spi/-close-input! in) (catch Exception _ nil)))))

(defn- default-on-error [recent]
  (fn [{:keys [task segment ^Throwable exception] :as e}]
    (swap! recent (fn [v] (vec (take-last 20 (conj v (assoc e :exception (.toString exception)))))))
    (binding [*out* *err*]
      (println "herald.flow: task" task "threw on" (pr-str segment) ":" (.toString exception)))))

(defn start!
  "Starts validated `job` with `opts` (see `herald.flow/submit-job`); returns the handle map."
  [job {:keys [data-dir checkpoint-interval-ms queue-capacity on-error fuse?]
        :or {checkpoint-interval-ms 1000 queue-capacity 32 fuse? true}}]
  (let [resolve (route/resolver)
        tasks (into {} (map (juxt :task/name identity)) (:catalog job))
        stages (plan/wire job (plan/stages job {:fuse? fuse?}) queue-capacity)
        lock (when data-dir (snap/lock! data-dir))
        restored (when data-dir (snap/latest data-dir))
        recent (atom [])
        ctx {:job job :tasks tasks :stages stages :resolve resolve :restored restored
             :restored-windows (restored-windows restored)
             :on-error (or on-error (default-on-error recent))
             :metrics (into {} (map (fn [t] [(:task/name t) (metrics/task-metrics)])) (:catalog job))
             :retry-states (into {} (for [t (:catalog job) :when (= :output (:task/type t))] [(:task/name t) (atom [])]))
             :lifecycles (lc/compile-lifecycles job)}
        built (atom [])
        workers (try (doall (for [s stages i (range (:parallelism s))]
                              (let [w (build-worker ctx s i)] (swap! built conj w) w)))
                     (catch Throwable e (close-all! @built) (some-> lock snap/unlock!) (throw e)))
        running (volatile! true)
        coord (coordinator/coordinator {:job job :data-dir data-dir :interval-ms checkpoint-interval-ms
                                        :workers workers :restored restored :metrics (:metrics ctx)
                                        :running running :on-end #(some-> lock snap/unlock!)})
        threads (mapv (fn [w]
                        (doto (Thread. ^Runnable (fn [] (worker/run-worker (assoc w :coord coord :running running)))
                                       (str "herald-flow-" (name (:job/name job)) "-" (name (first (:task-names w))) "-" (:me w)))
                          (.setDaemon true)))
                      workers)]
    (run! #(.start ^Thread %) threads)
    ((:start! coord) threads)
    {:job job :stages stages :coord coord :running running :threads threads :metrics (:metrics ctx)
     :recent-errors recent :restored-epoch (:epoch restored) :retry-states (:retry-states ctx)
     :inputs (into {} (for [w workers :when (:input w)] [(first (:task-names w)) (:input w)]))}))
