(ns herald.flow.kafka
  "The :kafka-streams runtime of herald.flow: runs a job value as a Kafka Streams application (loaded by herald.flow only when a job asks for it).

  Use it through `herald.flow/submit-job` with `{:runtime :kafka-streams :kafka {...}}`; the handle answers
  `await-job`, `kill-job` and `job-metrics` like the in-process one. docs/flow.md, \"Running on Kafka
  Streams\", and docs/adr/0009-flow-on-kafka-streams.md describe the mapping."
  (:require [herald.flow.impl.lifecycle :as lc]
            [herald.flow.impl.metrics :as metrics]
            [herald.flow.impl.retry :as retry]
            [herald.flow.impl.route :as route]
            [herald.flow.kafka.check :as check]
            [herald.flow.kafka.output :as output]
            [herald.flow.kafka.progress :as progress]
            [herald.flow.kafka.topology :as topology]
            [herald.flow.spi :as spi])
  (:import (java.time Duration)
           (java.util Properties)
           (java.util.concurrent Executors ScheduledExecutorService TimeUnit)
           (org.apache.kafka.clients.admin Admin NewTopic)
           (org.apache.kafka.common Metric MetricName)
           (org.apache.kafka.common.errors TopicExistsException)
           (org.apache.kafka.streams KafkaStreams KafkaStreams$CloseOptions KafkaStreams$State KafkaStreams$StateListener StreamsConfig)
           (org.apache.kafka.streams.errors StreamsUncaughtExceptionHandler
                                            StreamsUncaughtExceptionHandler$StreamThreadExceptionResponse)))

(set! *warn-on-reflection* true)

(defn- explicit
  "The values of task key `k` that the job's input tasks set themselves (not the model's defaults)."
  [raw-job k]
  (keep k (filter #(= :input (:task/type %)) (:catalog raw-job))))

(defn- config
  "The Kafka Streams properties of validated `job` under `opts` (raw-job: as given, to tell set keys from defaults)."
  ^Properties [raw-job job {:keys [data-dir checkpoint-interval-ms kafka]}]
  (let [{:keys [bootstrap-servers application-id processing-guarantee threads start-from replication-factor config]
         :or {processing-guarantee :exactly-once-v2 start-from :earliest replication-factor 1}} kafka
        batch (explicit raw-job :task/batch-size)
        wait (explicit raw-job :task/batch-timeout-ms)
        m (cond-> {StreamsConfig/APPLICATION_ID_CONFIG application-id
                   StreamsConfig/BOOTSTRAP_SERVERS_CONFIG bootstrap-servers
                   StreamsConfig/PROCESSING_GUARANTEE_CONFIG (if (= processing-guarantee :at-least-once)
                                                               StreamsConfig/AT_LEAST_ONCE StreamsConfig/EXACTLY_ONCE_V2)
                   StreamsConfig/NUM_STREAM_THREADS_CONFIG (str (or threads (reduce max 1 (map :task/parallelism (:catalog job)))))
                   StreamsConfig/REPLICATION_FACTOR_CONFIG (str replication-factor)
                   "auto.offset.reset" (name start-from)
                   ;; kill-job leaves the consumer group, so a resubmit (or another instance) takes the partitions at
                   ;; once instead of after session.timeout.ms; :config can set it back to false for rolling restarts
                   "main.consumer.internal.leave.group.on.close" "true"}
            data-dir (assoc StreamsConfig/STATE_DIR_CONFIG (str (java.io.File. (str data-dir) "kafka-streams")))
            checkpoint-interval-ms (assoc StreamsConfig/COMMIT_INTERVAL_MS_CONFIG (str checkpoint-interval-ms))
            (seq batch) (assoc "max.poll.records" (str (reduce max batch)))
            (seq wait) (assoc StreamsConfig/POLL_MS_CONFIG (str (max 1 (long (reduce min wait))))))]
    (doto (Properties.)
      (.putAll m)
      (.putAll (into {} (map (fn [[k v]] [(if (keyword? k) (name k) k) (str v)])) config)))))

(defn- admin ^Admin [^Properties props]
  (Admin/create (doto (Properties.)
                  (.put "bootstrap.servers" (.getProperty props StreamsConfig/BOOTSTRAP_SERVERS_CONFIG))
                  (.put "default.api.timeout.ms" "20000") (.put "request.timeout.ms" "10000"))))

(defn- admin-call [what f]
  (try (f)
       (catch Exception e
         (let [c (if (instance? java.util.concurrent.ExecutionException e) (.getCause e) e)]
           (throw (ex-info (str "Kafka " what " failed: " (.getMessage ^Throwable c))
                           {:type :herald.flow/kafka-unavailable :operation what} c))))))

(defn- partition-count [^Admin admin ^String topic]
  (let [^java.util.Collection topics [topic]
        m (.get (.allTopicNames (.describeTopics admin topics)) 20 TimeUnit/SECONDS)]
    (count (.partitions ^org.apache.kafka.clients.admin.TopicDescription (get m topic)))))

(defn- prepare-topics!
  "Checks that every input and output topic exists (refusing the job naming :kafka/topic otherwise) and
  creates the repartition topics the topology needs."
  [^Properties props job {:keys [inputs outputs repartition-topics]} replication]
  (with-open [admin (admin props)]
    (let [wanted (set (map second (concat inputs outputs)))
          list-topics #(admin-call "listing topics" (fn [] (set (.get (.names (.listTopics admin)) 20 TimeUnit/SECONDS))))
          ;; a topic created a moment ago (by the application, just before submitting) may take a while to show in
          ;; the metadata the broker answers with: look again for up to 5 s before refusing the job
          existing (loop [seen (list-topics) tries 0]
                     (if (or (every? seen wanted) (>= tries 25))
                       seen
                       (do (Thread/sleep 200) (recur (list-topics) (inc tries)))))
          index (into {} (map-indexed (fn [i t] [(:task/name t) i])) (:catalog job))]
      (doseq [[n topic] (concat inputs outputs) :when (not (existing topic))]
        (throw (ex-info (str "Topic " (pr-str topic) " of task " n " (:kafka/topic at " [:catalog (index n) :kafka/topic]
                             ") does not exist on " (.getProperty props "bootstrap.servers")
                             ". Fix: create it first (the runtime creates only its own repartition topics)")
                        {:type :herald.flow/missing-topic :path [:catalog (index n) :kafka/topic] :key :kafka/topic
                         :value topic :task n})))
      (doseq [{:keys [topic partitions task]} repartition-topics :when (existing topic)
              :let [n (admin-call (str "describing " topic) #(partition-count admin topic))]
              :when (not= n partitions)]
        (throw (ex-info (str "Not supported on :kafka-streams: :task/parallelism " partitions " of task " task
                             " (its repartition topic " topic " already has " n " partitions, and an application's"
                             " state cannot be regrouped). Fix: keep :task/parallelism " n ", or start under a new :application-id")
                        {:type :herald.flow/unsupported :runtime :kafka-streams :path [:catalog (index task) :task/parallelism]
                         :key :task/parallelism :value partitions :task task})))
      (doseq [{:keys [topic partitions]} repartition-topics :when (not (existing topic))]
        (admin-call (str "creating " topic)
                    #(try (.get (.all (.createTopics admin [(NewTopic. ^String topic (int partitions) (short replication))]))
                                20 TimeUnit/SECONDS)
                          (catch java.util.concurrent.ExecutionException e
                            (when-not (instance? TopicExistsException (.getCause e)) (throw e)))))))))

(defn- check-plugin-outputs!
  "Builds and closes each plugin output once, so that a constructor refusing its options (see
  `herald.flow.spi/option`) refuses the job at submit, as in-process; the runtime builds them again per
  stream task."
  [job names]
  (let [resolve (route/resolver)]
    (doseq [t (:catalog job) :when (contains? names (:task/name t))]
      (spi/-close-output! ((resolve (:task/plugin t)) t)))))

(defn- default-on-error [recent]
  (fn [{:keys [task segment ^Throwable exception] :as e}]
    (swap! recent (fn [v] (vec (take-last 20 (conj v (assoc e :exception (.toString exception)))))))
    (binding [*out* *err*]
      (println "herald.flow: task" task "threw on" (pr-str segment) ":" (.toString exception)))))

(defn- retry-pending?
  "Whether `e` or one of its causes is an output's `:herald.flow/output-retry-pending`."
  [^Throwable e]
  (boolean (some #(= :herald.flow/output-retry-pending (:type (ex-data %))) (take-while some? (iterate #(.getCause ^Throwable %) e)))))

(def ^:private ^ThreadLocal closing-thread
  "True on a stream thread once it threw out of its loop: Kafka Streams calls the uncaught exception handler on
  that thread, then closes its tasks dirty, and closing a task still runs the outputs' pre-commit hook (a flush
  whose failure it swallows). A failing output then tried again for up to its poll budget per stream task (3 s
  each in kafka-output-test; 150 s by default), holding the tasks from the thread's successor, and could log that
  it works again beside the successor's copy of the same run. Retries (`stop?`) end at once there instead; the
  records are read again from the committed offsets."
  (ThreadLocal.))

(defn- watch!
  "Ends the handle's status when the application fails (closing it on another thread) or stops."
  [^KafkaStreams streams {:keys [done status error killed]}]
  (.setUncaughtExceptionHandler streams
                                (reify StreamsUncaughtExceptionHandler
                                  (handle [_ e]
                                    (.set closing-thread true)
                                    (if (retry-pending? e)
                                      ;; an output still retrying gave its tasks back: a new thread resumes them
                                      ;; from the committed offsets (see herald.flow.kafka.output)
                                      StreamsUncaughtExceptionHandler$StreamThreadExceptionResponse/REPLACE_THREAD
                                      (do (reset! error e)
                                          StreamsUncaughtExceptionHandler$StreamThreadExceptionResponse/SHUTDOWN_CLIENT)))))
  (.setStateListener streams
                     (reify KafkaStreams$StateListener
                       (onChange [_ new-state _]
                         (swap! status assoc :kafka/state (str new-state))
                         (when (= new-state KafkaStreams$State/ERROR)
                           (let [st {:status :failed :error @error}]
                             (swap! status merge st)
                             (deliver done st)
                             (doto (Thread. ^Runnable (fn [] (.close streams (Duration/ofSeconds 10)))) (.setDaemon true) (.start))))
                         (when (and (= new-state KafkaStreams$State/NOT_RUNNING) (not (realized? done)))
                           (let [st (if @killed {:status :killed} {:status :failed :error @error})]
                             (swap! status merge st)
                             (deliver done st)))))))

(defn start!
  "Starts validated `job` (`raw-job`: as submitted, after :inject) on Kafka Streams under submit `opts`;
  returns the handle. Throws before anything starts when the job cannot run there."
  [raw-job job opts]
  (check/check! raw-job opts)
  (let [opts (update opts :kafka #(merge {:application-id (str "herald-" (name (:job/name job)))} %))
        props (config raw-job job opts)
        recent (atom [])
        task-metrics (into {} (map (fn [t] [(:task/name t) (metrics/task-metrics)])) (:catalog job))
        retry-states (output/retry-states)
        error-states (output/retry-states)
        killed (atom false)
        streams-ref (volatile! nil)
        ;; retries (of outputs, of :on-error) stop once the application closes: its close does not interrupt
        ;; the stream threads, and one sleeping in a retry loop held its tasks (and its place in the group) for up
        ;; to half of max.poll.interval.ms after kill-job returned
        ;; and on a stream thread that is closing after it threw (`closing-thread`)
        stop? (fn [] (or @killed (true? (.get closing-thread))
                         (when-let [^KafkaStreams s @streams-ref] (not (.isRunningOrRebalancing (.state s))))))
        built (topology/build job {:app-id (get-in opts [:kafka :application-id]) :resolve (route/resolver)
                                   :retry-states retry-states :error-states error-states :stop? stop?
                                   :on-error (or (:on-error opts) (default-on-error recent))
                                   :metrics task-metrics :lifecycles (lc/compile-lifecycles job)
                                   :store (get-in opts [:kafka :store] :rocksdb)})
        _ (check-plugin-outputs! job (:plugin-outputs built))
        _ (prepare-topics! props job built (get-in opts [:kafka :replication-factor] 1))
        ^KafkaStreams streams (vreset! streams-ref (KafkaStreams. ^org.apache.kafka.streams.Topology (:topology built) props))
        done (promise)
        status (atom {:status :running :started-at (System/currentTimeMillis)})
        state {:done done :status status :error (atom nil) :killed killed :admin (delay (admin props))
               :group-lag (atom {:at 0 :value nil :asking false})}
        sampler (doto (Executors/newSingleThreadScheduledExecutor
                       (reify java.util.concurrent.ThreadFactory
                         (newThread [_ r] (doto (Thread. r (str "herald-flow-kafka-metrics-" (name (:job/name job)))) (.setDaemon true)))))
                  (.scheduleAtFixedRate ^Runnable (fn [] (run! metrics/sample! (vals task-metrics))) 1 1 TimeUnit/SECONDS))]
    (watch! streams state)
    (future (deref done) (.shutdownNow ^ScheduledExecutorService sampler) (when (realized? (:admin state)) (.close ^Admin @(:admin state))))
    (.start streams)
    (merge state
           {:runtime :kafka-streams :job job :opts opts :streams streams :config props :coord {:done done}
            :metrics task-metrics :recent-errors recent :inputs (:inputs built) :outputs (:outputs built)
            :plugin-outputs (:plugin-outputs built) :retry-states retry-states :error-states error-states
            :repartition-topics (:repartition-topics built) :topology (:topology built)})))

(defn kill-job!
  "Closes the application cleanly (committing, leaving the consumer group), waiting at most `timeout-ms`."
  [{:keys [^KafkaStreams streams killed done status]} timeout-ms]
  (reset! killed true)
  (.close streams (-> (KafkaStreams$CloseOptions.) (.timeout (Duration/ofMillis timeout-ms)) (.leaveGroup true)))
  (when-not (realized? done)
    (swap! status assoc :status :killed)
    (deliver done {:status :killed})))

(defn await-caught-up
  "See `herald.flow/await-caught-up`: the input topics first, then (once per level of regrouping) the
  repartition topics, whose end offsets are taken once the level before them has committed."
  [{:keys [admin done opts inputs repartition-topics]} ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)
        group (get-in opts [:kafka :application-id])
        left #(max 0 (- deadline (System/currentTimeMillis)))
        ended? #(realized? done)]
    (and (not (ended?))
         (progress/await-caught-up @admin group (set (vals inputs)) ended? timeout-ms)
         (every? (fn [_] (progress/await-caught-up @admin group (set (map :topic repartition-topics)) ended? (left)))
                 repartition-topics))))

(defn- group-lag
  "The cluster-wide lag of the job's input topics (progress/group-lag) as last asked of the brokers; asks again
  on a background thread when that answer is older than a second, so a caller never waits for the brokers.
  nil before the first answer, and while they do not answer."
  [{:keys [admin opts inputs done] cache :group-lag}]
  (let [{:keys [at value asking]} @cache now (System/currentTimeMillis)]
    (when (and (not asking) (not (realized? done)) (> (- now (long at)) 1000))
      (swap! cache assoc :asking true)
      (future
        (let [v (try (progress/group-lag @admin (get-in opts [:kafka :application-id]) (set (vals inputs)))
                     (catch Exception _ nil))]
          (reset! cache {:at (System/currentTimeMillis) :value v :asking false}))))
    value))

(defn- metric-values
  "[group name tags value] of every metric of the client."
  [^KafkaStreams streams]
  (for [[^MetricName mn ^Metric m] (.metrics streams)
        :let [v (.metricValue m)] :when (and (number? v) (not (Double/isNaN (double v))))]
    [(.group mn) (.name mn) (.tags mn) (double v)]))

(defn job-metrics
  "The job's metrics map (see `herald.flow/job-metrics`)."
  [{:keys [^KafkaStreams streams status metrics recent-errors inputs job plugin-outputs retry-states error-states
           repartition-topics] :as handle}]
  (let [ms (metric-values streams)
        sum (fn [g n] (reduce + 0.0 (for [[g' n' _ v] ms :when (and (= g g') (= n n'))] v)))
        topic-of (merge (into {} (for [{:keys [topic task]} repartition-topics] [task topic])) inputs)
        lag (fn [topic] (let [vs (for [[g n tags v] ms :when (and (= g "consumer-fetch-manager-metrics") (= n "records-lag")
                                                                 (= topic (get tags "topic")))] v)]
                          (when (seq vs) (long (reduce + vs)))))]
    (assoc @status
           :job/name (:job/name job)
           :runtime :kafka-streams
           :recent-errors @recent-errors
           :kafka {:state (str (.state streams))
                   :process-rate (sum "stream-thread-metrics" "process-rate")
                   :process-total (sum "stream-thread-metrics" "process-total")
                   :commit-rate (sum "stream-thread-metrics" "commit-rate")
                   :group-lag (group-lag handle)
                   :records-lag-max (reduce max 0.0 (for [[g n _ v] ms :when (and (= g "consumer-fetch-manager-metrics")
                                                                                  (= n "records-lag-max"))] v))}
           :tasks (into {} (for [[tname m] metrics]
                             [tname (cond-> (assoc (metrics/report m) :parallelism (:task/parallelism (some #(when (= tname (:task/name %)) %) (:catalog job))))
                                      (topic-of tname) (assoc :lag (lag (topic-of tname))
                                                              :lag-by-partition (progress/lag-by-partition ms (topic-of tname)))
                                      (contains? plugin-outputs tname) (merge (output/failures retry-states tname))
                                      ;; a task run by a processor on this instance (its :on-error retried: herald.flow.kafka.processor/report!)
                                      (some #(= tname (first %)) (keys error-states))
                                      (merge (let [f (retry/failures (for [[[n] st] error-states :when (= n tname)] st))]
                                               {:on-error-failures (:write-failures f) :on-error-failing? (:failing? f)})))])))))
