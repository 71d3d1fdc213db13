(ns herald.flow.kafka-support
  "Running one job on both runtimes for the Kafka Streams tests: in-process over seq inputs, on Kafka Streams over topics of the shared broker."
  (:require [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.test-fns :as fns]))

(set! *warn-on-reflection* true)

(defn tasks-of [job type] (vec (for [t (:catalog job) :when (= type (:task/type t))] (:task/name t))))

(defn errors-of
  "Segment errors counted over every task of a job-metrics map."
  [m]
  (reduce + (map :errors (vals (:tasks m)))))

(defn run-in-process
  "Runs `job` with input task name -> segments `inputs`; {:outputs {name [segs]} :errors n}."
  [job inputs]
  (reset! fns/fired [])
  (let [outs (into {} (for [o (tasks-of job :output)] [o (atom [])]))
        h (flow/submit-job job {:inject (merge (into {} (for [[i segs] inputs] [i {:seq/segments segs}]))
                                               (into {} (for [[o a] outs] [o {:sink/atom a}])))
                                :on-error (fn [_])})
        st (flow/await-job h 30000)]
    (assert (= :completed (:status st)) (pr-str st))
    {:outputs (into {} (for [[o a] outs :when (seq @a)] [o @a]))
     :errors (errors-of (flow/job-metrics h))}))

(def ^:private runs (atom 0))

(defn- delete-tree! [^java.io.File f]
  (when (.isDirectory f) (run! delete-tree! (.listFiles f)))
  (.delete f))

(def ^:private temp-root
  (delay (let [d (.toFile (java.nio.file.Files/createTempDirectory "herald-kstreams-" (make-array java.nio.file.attribute.FileAttribute 0)))]
           (.addShutdownHook (Runtime/getRuntime) (Thread. ^Runnable (fn [] (delete-tree! d))))
           d)))

(defn temp-dir
  "A new directory for one application's local state, deleted when the JVM exits."
  []
  (str (.toFile (java.nio.file.Files/createTempDirectory (.toPath ^java.io.File @temp-root) "app-"
                                                         (make-array java.nio.file.attribute.FileAttribute 0)))))

(defn fresh-prefix
  "A name no earlier run of this JVM used (topics and application ids)."
  []
  (str "t" (swap! runs inc) "-" (System/currentTimeMillis)))

(defn kafka-opts
  "Submit options for the Kafka Streams runtime: `topics` is task name -> topic, `kafka` merges into :kafka."
  [bootstrap app-id topics kafka]
  {:runtime :kafka-streams
   :inject (into {} (for [[n t] topics] [n {:kafka/topic t}]))
   :on-error (fn [_])
   :data-dir (temp-dir)
   :kafka (merge {:bootstrap-servers bootstrap :application-id app-id} kafka)})

(defn run-on-kafka
  "Runs `job` on Kafka Streams: creates its topics (inputs with `partitions` partitions), writes `inputs`
  (task name -> segments), submits, reads the outputs (read_committed) until `expected` segments came (then
  `settle-ms` more, to see any extra), kills the job. Returns {:outputs {name [segs]} :errors n :metrics m :config Properties :took \"what came how fast\"}."
  [bootstrap job inputs expected {:keys [partitions settle-ms timeout-ms kafka] :or {partitions 2 settle-ms 1500 timeout-ms 90000}}]
  (let [p (fresh-prefix)
        topic (fn [n] (str p "." (subs (str n) 1)))
        ins (tasks-of job :input) outs (tasks-of job :output)]
    (kb/create-topics! bootstrap (map topic ins) partitions)
    (kb/create-topics! bootstrap (map topic outs) 1)
    (doseq [[i segs] inputs] (kb/produce! bootstrap (topic i) segs))
    (let [h (flow/submit-job job (kafka-opts bootstrap p (into {} (map (juxt identity topic)) (concat ins outs)) kafka))]
      (try
        (with-open [c (kb/consumer bootstrap (map topic outs))]
          (let [t0 (System/currentTimeMillis)
                got (kb/poll-until c #(>= (reduce + (map count (vals %))) expected) timeout-ms settle-ms)
                m (flow/job-metrics h)]
            {:outputs (into {} (for [o outs :let [v (get got (topic o))] :when (seq v)] [o v]))
             :errors (errors-of m)
             :metrics m
             :config (:config h)
             :took (str (reduce + (map count (vals got))) " of " expected " segments in "
                        (- (System/currentTimeMillis) t0) " ms (load average "
                        (.getSystemLoadAverage (java.lang.management.ManagementFactory/getOperatingSystemMXBean)) ")")}))
        (finally (flow/kill-job h))))))
