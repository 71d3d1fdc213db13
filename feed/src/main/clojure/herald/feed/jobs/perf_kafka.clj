(ns herald.feed.jobs.perf-kafka
  "The per-minute job cluster-wide (`:events {:type :kafka}`): every instance sends its requests (summed per minute into HdrHistograms) to one topic, the job runs on Kafka Streams under one application id for the cluster (merged histograms, exactly-once window state) and writes minute rows to a compacted topic that every instance reads from the beginning into its view."
  (:require [clojure.edn :as edn]
            [herald.feed.events.kafka :as kafka]
            [herald.feed.jobs :as jobs]
            [herald.feed.jobs.minutes :as minutes]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.jobs.perf-sender :as sender]
            [herald.flow :as flow]
            [herald.flow.plugin :as plugin])
  (:import (java.nio.charset StandardCharsets)
           (java.time Duration)
           (java.util Map Properties)
           (java.util.concurrent ConcurrentHashMap TimeUnit)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)
           (org.apache.kafka.clients.admin Admin ListOffsetsOptions ListOffsetsResult$ListOffsetsResultInfo NewTopic OffsetSpec)
           (org.apache.kafka.clients.consumer ConsumerRecord KafkaConsumer)
           (org.apache.kafka.clients.producer KafkaProducer)
           (org.apache.kafka.common IsolationLevel TopicPartition)
           (org.apache.kafka.common.errors WakeupException)
           (org.apache.kafka.common.serialization ByteArraySerializer Deserializer Serde Serdes Serializer)))

(set! *warn-on-reflection* true)

(defn- log [& xs] (binding [*out* *err*] (apply println "herald.feed.perf:" xs)))

;; ---------------------------------------------------------------------------------------------------
;; minute rows on the topic: EDN text, the histogram as minutes/encode-histogram text

(defn- row-bytes ^bytes [row]
  (let [^String s (binding [*print-length* nil *print-level* nil]
                    (pr-str (update row :histogram minutes/encode-histogram)))]
    (.getBytes s StandardCharsets/UTF_8)))

(defn read-row
  "The minute row of a record value, or nil when it is not one."
  [^bytes b]
  (try (let [r (edn/read-string (String. b StandardCharsets/UTF_8))]
         (when (and (map? r) (integer? (:minute r)) (string? (:histogram r)) (map? (:statuses r)))
           (update r :histogram minutes/decode-histogram)))
       (catch Exception _ nil)))

(def row-serde
  "The `:kafka/serde` of the job's output topic: minute rows as EDN text, histograms encoded."
  (Serdes/serdeFrom (reify Serializer (serialize [_ _ x] (when x (row-bytes x))))
                    (reify Deserializer (deserialize [_ _ b] (when b (read-row b))))))

;; ---------------------------------------------------------------------------------------------------
;; topics and clients

(defn names
  "The topics and application id under `:topic-prefix` p (default \"herald-\"): p+\"perf-requests\",
  p+\"perf-minutes\", p+\"perf\"."
  [events]
  (let [p (:topic-prefix events "herald-")]
    {:requests (str p "perf-requests") :minutes (str p "perf-minutes") :app-id (str p "perf")}))

(defn- client-props
  "Client properties: ours by default, then the bootstrap servers of `events` and `m`."
  ^Properties [events m]
  (doto (Properties.)
    ;; an unreachable broker: Kafka's clients log each reconnection try; fewer tries, fewer lines
    (.put "reconnect.backoff.max.ms" "10000")
    (.put "bootstrap.servers" (str (:bootstrap-servers events)))
    (.putAll ^Map m)))

(defn- create-topics!
  "Creates the requests topic and the compacted minutes topic when missing."
  [events {:keys [requests minutes]} {:keys [retention-minutes allowed-lateness-ms]}]
  (let [keep-ms (+ (* 60000 (inc (long retention-minutes))) (long allowed-lateness-ms))
        rf (short (:replication-factor events 1))]
    (kafka/create-topics! (str (:bootstrap-servers events))
                          [(doto (NewTopic. ^String requests 1 rf)
                             (.configs {"retention.ms" (str (max 3600000 (* 2 (long allowed-lateness-ms))))}))
                           (doto (NewTopic. ^String minutes 1 rf)
                             (.configs {"cleanup.policy" "compact,delete" "retention.ms" (str keep-ms)
                                        "segment.ms" (str (min keep-ms 3600000))}))]
                          20000
                          (fn [topic ^Throwable cause]
                            (ex-info (str "Kafka at " (:bootstrap-servers events) ": creating topic " topic " failed: "
                                          (.getMessage cause))
                                     {:type :herald.feed/kafka-unavailable :topic topic} cause)))))

(defn- producer ^KafkaProducer [events]
  ;; send blocks only the sender thread, at most max.block.ms, when the broker is unknown or the buffer full
  (KafkaProducer. (client-props events (into {"acks" "all" "enable.idempotence" "true" "linger.ms" "20"
                                              "max.block.ms" "1000" "delivery.timeout.ms" "30000" "request.timeout.ms" "10000"}
                                             (map (fn [[k v]] [(if (keyword? k) (name k) (str k)) (str v)]))
                                             (:producer events)))
                  (ByteArraySerializer.) (ByteArraySerializer.)))

;; ---------------------------------------------------------------------------------------------------
;; the minutes consumer: no group, every partition from the beginning, read_committed

(defn- consume!
  "Reads the minutes topic into view `st` until `stop` is set; positions go to `positions` (partition ->
  offset). A failing poll is logged when it starts failing and when it reads again, not on every try."
  [^KafkaConsumer c st ^ConcurrentHashMap positions ^AtomicBoolean stop ^AtomicLong unreadable]
  (loop [failing? false]
    (when-not (.get stop)
      (recur (try
               (doseq [^ConsumerRecord r (.poll c (Duration/ofMillis 200))]
                 (if-let [row (some-> ^bytes (.value r) read-row)]
                   (jperf/upsert! st row)
                   (.incrementAndGet unreadable)))
               (doseq [^TopicPartition tp (.assignment c)] (.put positions (.partition tp) (.position c tp)))
               (when failing? (log "reading the minutes topic again"))
               false
               (catch WakeupException _ failing?)
               (catch Exception e
                 (when-not failing? (log "reading the minutes topic failed (retrying every second):" (str e)))
                 (Thread/sleep 1000)
                 true))))))

(defn- start-consumer! [events topic st]
  ;; the feed's one consumer builder (no group: assigned every partition below), read_committed, and the
  ;; reconnect backoff of `client-props`
  (let [c (kafka/consumer {:bootstrap-servers (str (:bootstrap-servers events))} nil
                          {"isolation.level" "read_committed" "reconnect.backoff.max.ms" "10000"})
        tps (mapv #(TopicPartition. topic (.partition ^org.apache.kafka.common.PartitionInfo %))
                  (.partitionsFor c ^String topic (Duration/ofSeconds 20)))
        positions (ConcurrentHashMap.) stop (AtomicBoolean.) unreadable (AtomicLong.)
        done (promise)]
    (.assign c tps)
    (.seekToBeginning c tps)
    (doto (Thread. ^Runnable (fn [] (try (consume! c st positions stop unreadable) (finally (.close c) (deliver done true))))
                   "herald-feed-perf-minutes")
      (.setDaemon true) (.start))
    {:consumer c :tps tps :positions positions :stop stop :unreadable unreadable :done done}))

(defn- ends
  "Partition -> last stable offset of the minutes topic now, or nil when Kafka did not answer in time."
  [^Admin admin tps ^long timeout-ms]
  (try (let [r (.listOffsets admin ^Map (into {} (map (fn [tp] [tp (OffsetSpec/latest)])) tps)
                             (ListOffsetsOptions. IsolationLevel/READ_COMMITTED))]
         (into {} (for [^TopicPartition tp tps
                        :let [^ListOffsetsResult$ListOffsetsResultInfo info
                              (.get (.partitionResult r tp) timeout-ms TimeUnit/MILLISECONDS)]]
                    [(.partition tp) (.offset info)])))
       (catch Exception _ nil)))

;; ---------------------------------------------------------------------------------------------------
;; waiting for the figures

(defn- seen?
  "True once the batch sent as `seq` for minute key `k` shows in the view (or its minute is final, or it
  was sent more than a minute ago: late or lost, not worth waiting for)."
  [st src k ^longs sent now]
  (or (>= (long (get (jperf/sources-of st k) src -1)) (aget sent 0))
      (:final? (jperf/row-of st k))
      (> (- (long now) (aget sent 1)) 60000)))

(defn- await-figures
  "Sends what the sender holds, then waits until the view shows every batch it sent and has read the
  minutes topic up to its end as of then. True if within `timeout-ms`."
  [{:keys [sd st src admin consumer]} ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)
        left #(max 0 (- deadline (System/currentTimeMillis)))
        target (sender/request-flush! sd)
        wait-until (fn [ok?] (loop [] (cond (ok?) true (zero? (long (left))) false :else (do (Thread/sleep 2) (recur)))))]
    (and (wait-until #(sender/flushed? sd target))
         (wait-until (fn [] (let [now (System/currentTimeMillis) ^ConcurrentHashMap aw (sender/awaiting sd)]
                              (doseq [[k sent] aw :when (seen? st src k sent now)] (.remove aw k sent))
                              (.isEmpty aw))))
         (let [end (ends admin (:tps consumer) (max 1 (long (left))))
               ^ConcurrentHashMap pos (:positions consumer)]
           (and end (wait-until #(every? (fn [[p o]] (>= (long (or (.get pos p) -1)) (long o))) end)))))))

;; ---------------------------------------------------------------------------------------------------
;; the recorder

(defn- delete-tree! [^java.io.File f]
  (when (.isDirectory f) (run! delete-tree! (.listFiles f)))
  (.delete f))

(defn- state-dir
  "[dir temp?]: `data-dir`, or a new temporary directory (deleted at close) when nil."
  [data-dir]
  (if data-dir
    [data-dir false]
    [(str (java.nio.file.Files/createTempDirectory "herald-perf-" (make-array java.nio.file.attribute.FileAttribute 0))) true]))

(defn- submit! [o events dir {:keys [requests minutes app-id]}]
  (jobs/watch!
   (flow/submit-job (jobs/perf-job o)
                    {:runtime :kafka-streams :data-dir dir
                     ;; one transaction (commit) a second, not Kafka Streams' exactly-once default of 100 ms: minute
                     ;; figures need no more, and a busy broker answers back-to-back transactions with retries
                     :checkpoint-interval-ms 1000
                     :inject {:requests {:kafka/topic requests}
                              :minutes {:kafka/topic minutes :kafka/serde ::row-serde
                                        :task/group-by-key [:minute :entity :operation]}}
                     :kafka {:bootstrap-servers (str (:bootstrap-servers events)) :application-id app-id
                             :replication-factor (:replication-factor events 1) :store :in-memory
                             ;; the heartbeat thread's wake-ups, as the fan-out and index jobs (jobs.derived)
                             :config (merge kafka/idle-consumer-config (:streams events {}))}})))

(def ^:private events-spec
  {:bootstrap-servers [#(and (string? %) (re-find #"\S:\d+" %)) "a \"host:port[,host:port...]\" string"]
   :topic-prefix [#(and (string? %) (re-matches #"[a-zA-Z0-9._-]*" %)) "a string of letters, digits, '.', '_' and '-'"]
   :replication-factor [#(and (integer? %) (pos? (long %))) "a positive integer"]
   :producer [map? "a map of Kafka producer properties"]
   :streams [map? "a map of Kafka Streams properties"]})

(defn- check-events!
  "Checks the `:events` keys this recorder reads (others belong to other parts and pass), naming the key."
  [events]
  (doseq [[k [ok? what]] events-spec
          :let [v (get events k)]
          :when (or (and (nil? v) (= k :bootstrap-servers)) (and (some? v) (not (ok? v))))]
    (throw (ex-info (str ":events " k " must be " what ", got " (pr-str v))
                    {:type :herald.feed/config :key [:events k] :value v}))))

(defn kafka-recorder
  "The recorder of `herald.feed.jobs.perf/flow-recorder` (which checks and defaults `opts`) cluster-wide.
  Creates, when missing, topic `<prefix>perf-requests` (1 partition; batches of every instance) and the
  compacted `<prefix>perf-minutes` (1 partition, `compact,delete`, kept the retention plus the lateness);
  runs the job on Kafka Streams as application `<prefix>perf` (in-memory stores, changelogged; the state dir
  under `:data-dir`, else in a temporary dir deleted at close); reads the minutes topic from the beginning (no consumer group, read_committed) into its
  view, so /perf on any instance shows the cluster's minutes and a restarted one shows the past ones again.
  Throws ex-info `:herald.feed/config` naming a bad `:events` key, `:herald.feed/kafka-unavailable` when the
  topics cannot be made at start.

  `:events` keys read:

  | key                   | type   | default     | meaning |
  |-----------------------|--------|-------------|---------|
  | `:bootstrap-servers`  | string | required    | the brokers, \"host:port,...\" |
  | `:topic-prefix`       | string | `\"herald-\"` | prefix of the topics and the application id |
  | `:replication-factor` | int    | 1           | of the topics it creates (and Kafka Streams' internal ones) |
  | `:producer`           | map    | {}          | extra producer properties (the request records' producer) |
  | `:streams`            | map    | {}          | extra Kafka Streams properties (the per-minute application) |"
  [{:keys [events retention-minutes queue-size send-ms allowed-lateness-ms] :as o}]
  (check-events! events)
  (let [ns (names events)
        _ (create-topics! events ns o)
        st (jperf/view retention-minutes)
        ;; the instance's name in the figures (the dashboard lists the instances of a minute): host, pid, a nonce
        src (str (.getHostName (java.net.InetAddress/getLocalHost)) "/" (.pid (java.lang.ProcessHandle/current)) "/"
                 (subs (str (java.util.UUID/randomUUID)) 0 8))
        in (plugin/push-input {:task/name :requests :push/capacity queue-size})
        p (producer events)
        sd (sender/sender in p (:requests ns) src {:send-ms send-ms :max-age-ms allowed-lateness-ms})
        consumer (start-consumer! events (:minutes ns) st)
        admin (Admin/create (client-props events {"default.api.timeout.ms" "5000" "request.timeout.ms" "5000"}))
        [dir temp?] (state-dir (:data-dir o))
        job (submit! o events dir ns)
        rt {:sd sd :st st :src src :admin admin :consumer consumer}
        closed (AtomicBoolean.)]
    (jperf/recorder
     st
     {:src src
      :record! (fn [entity op us status at]
                 (flow/offer! in {:entity entity :operation op :us us :status status :at at}))
      :await (fn [timeout-ms] (await-figures rt timeout-ms))
      :stats (fn [] (let [{:keys [accepted queued dropped]} (flow/push-stats in)]
                      (merge {:recorded accepted :queued queued
                              :late (long (or (get-in (flow/job-metrics job) [:tasks :per-minute :late]) 0))
                              :unreadable (.get ^AtomicLong (:unreadable consumer))}
                             (update (sender/stats sd) :dropped + dropped))))
      :close! (fn [timeout-ms]
                (if (.getAndSet closed true)
                  true
                  (let [sent (sender/close! sd timeout-ms)]
                    (.close p (Duration/ofMillis (long timeout-ms)))
                    (flow/kill-job job {:timeout-ms (max 1 (long timeout-ms))})
                    (.set ^AtomicBoolean (:stop consumer) true)
                    (.wakeup ^KafkaConsumer (:consumer consumer))
                    (deref (:done consumer) timeout-ms nil)
                    (.close admin (Duration/ofMillis (long timeout-ms)))
                    (when temp? (delete-tree! (java.io.File. ^String dir)))
                    sent)))}
     o)))
