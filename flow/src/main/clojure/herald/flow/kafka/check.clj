(ns herald.flow.kafka.check
  "What of a job or its options cannot run on Kafka Streams, refused at submit time naming the key and the reason."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defn unsupported!
  "Throws `:herald.flow/unsupported` for `key` holding `value` at `path`: \"not supported on :kafka-streams: ...\"."
  [path key value reason hint]
  (throw (ex-info (str "Not supported on :kafka-streams: " (pr-str key) " " (pr-str value)
                       (when (seq path) (str " at " (pr-str path))) " (" reason "). Fix: " hint)
                  {:type :herald.flow/unsupported :runtime :kafka-streams :path path :key key :value value
                   :problem reason :hint hint})))

(defn- check-opts! [opts]
  (when (contains? opts :queue-capacity)
    (unsupported! [:opts :queue-capacity] :queue-capacity (:queue-capacity opts)
                  "Kafka Streams buffers records per partition, not batches per thread"
                  "remove it; bound the buffering with :kafka {:config {\"buffered.records.per.partition\" n}}"))
  (when (false? (:fuse? opts))
    (unsupported! [:opts :fuse?] :fuse? false
                  "Kafka Streams runs the processors of a sub-topology in one loop and cannot run them apart"
                  "remove :fuse?")))

(defn- check-tasks! [job]
  (doseq [[i t] (map-indexed vector (:catalog job))
          :when (or (= :input (:task/type t)) (and (= :output (:task/type t)) (contains? t :kafka/topic)))
          :when (not (and (string? (:kafka/topic t)) (not (str/blank? (:kafka/topic t)))))]
    (unsupported! [:catalog i :kafka/topic] :kafka/topic (:kafka/topic t)
                  (str (name (:task/type t)) " task " (:task/name t) " names no topic; an input's :task/plugin "
                       (:task/plugin t) " runs in-process only")
                  (str "add :kafka/topic \"...\" to the task, in the job or through :inject {" (:task/name t) " {:kafka/topic \"...\"}}")))
  (doseq [[i t] (map-indexed vector (:catalog job))
          :when (and (= :output (:task/type t)) (:kafka/topic t))
          k [:output/retries :output/backoff-ms :output/backoff-max-ms :output/rejected? :output/rejected-retries :output/give-up-after-ms] :when (contains? t k)]
    (unsupported! [:catalog i k] k (get t k)
                  (str "output " (:task/name t) " writes topic " (:kafka/topic t) " through Kafka's producer, which retries by itself")
                  "remove it; tune the producer's delivery.timeout.ms through :kafka {:config {...}}")))

(defn- check-lifecycles! [job]
  (let [outputs (set (keep #(when (= :output (:task/type %)) (:task/name %)) (:catalog job)))]
    (doseq [[i lc] (map-indexed vector (:lifecycles job)) :when (outputs (:lifecycle/task lc))]
      (unsupported! [:lifecycles i :lifecycle/task] :lifecycle/task (:lifecycle/task lc)
                    "an output is a sink node writing its topic or a processor writing its plugin, and calls no hooks"
                    "put the hooks on the task that feeds the output"))))

(defn check!
  "Refuses what cannot map onto Kafka Streams: `job` (as given, after :inject) and the submit `opts`."
  [job opts]
  (check-opts! opts)
  (check-tasks! job)
  (check-lifecycles! job))
