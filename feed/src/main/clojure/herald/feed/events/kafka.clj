(ns herald.feed.events.kafka
  "Kafka as the feed's event log (the :scale profile): its options, its topics (created when missing), the idempotent producer that appends post records and leases post id blocks."
  (:require [clojure.string :as str])
  (:import (java.lang ProcessHandle)
           (java.util Properties)
           (java.util.concurrent ExecutionException TimeUnit TimeoutException)
           (org.apache.kafka.clients.admin Admin NewTopic)
           (org.apache.kafka.clients.consumer KafkaConsumer)
           (org.apache.kafka.clients.producer KafkaProducer ProducerRecord RecordMetadata)
           (org.apache.kafka.common.errors TopicExistsException)
           (org.apache.kafka.common.serialization ByteArrayDeserializer Serializer StringSerializer)
           (org.apache.kafka.common.utils Utils)
           (herald.flow.log RecordCodec)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(def defaults
  "The options of the Kafka event log (`:events` with `:type :kafka`), see `check`."
  {:bootstrap-servers "127.0.0.1:9092" :topic-prefix "herald-" :partitions 12 :replication-factor 1
   :min-insync-replicas nil :retention-ms 604800000 :send-timeout-ms 10000 :linger-ms 1 :threads 1 :commit-interval-ms 1000
   :fan-out-flush-ms 100 :index-flush-ms 500 :fetch-min-bytes 65536 :fetch-max-wait-ms 100 :batch-size 500 :retries :forever :backoff-ms 100 :backoff-max-ms 10000 :rejected-retries 10 :dead-letter-after-ms 600000 :data-dir "data"
   :producer {} :streams {}})

(defn- int-in? [lo hi] (fn [v] (and (int? v) (<= (long lo) (long v) (long hi)))))

(def ^:private spec
  {:bootstrap-servers [#(and (string? %) (re-matches #"[^\s,]+:\d+(,[^\s,]+:\d+)*" %)) "a host:port[,host:port...] string"]
   :topic-prefix [#(and (string? %) (re-matches #"[A-Za-z0-9._-]{0,200}" %)) "a string of A-Z a-z 0-9 . _ - (at most 200)"]
   :partitions [(int-in? 1 1024) "an integer in 1..1024"]
   :replication-factor [(int-in? 1 32) "an integer in 1..32"]
   :min-insync-replicas [#(or (nil? %) ((int-in? 1 32) %)) "nil (the broker's default) or an integer in 1..32"]
   :retention-ms [#(or (= -1 %) ((int-in? 60000 Long/MAX_VALUE) %)) "-1 (forever) or an integer >= 60000"]
   :send-timeout-ms [(int-in? 1000 600000) "an integer in 1000..600000"]
   :linger-ms [(int-in? 0 1000) "an integer in 0..1000"]
   :threads [(int-in? 1 64) "an integer in 1..64"]
   :commit-interval-ms [(int-in? 1 600000) "an integer in 1..600000"]
   :fan-out-flush-ms [(int-in? 1 600000) "an integer in 1..600000"]
   :index-flush-ms [(int-in? 1 600000) "an integer in 1..600000"]
   :fetch-min-bytes [(int-in? 1 52428800) "an integer in 1..52428800"]
   :fetch-max-wait-ms [(int-in? 0 10000) "an integer in 0..10000"]
   :batch-size [(int-in? 1 100000) "an integer in 1..100000"]
   :retries [#(or (= :forever %) ((int-in? 0 1000000) %)) ":forever or a non-negative integer"]
   :backoff-ms [(int-in? 1 600000) "an integer in 1..600000"]
   :backoff-max-ms [(int-in? 1 3600000) "an integer in 1..3600000"]
   :rejected-retries [(int-in? 0 1000000) "a non-negative integer"]
   :dead-letter-after-ms [#(or (nil? %) ((int-in? 1 Long/MAX_VALUE) %)) "nil (retry an outage forever) or a positive integer (milliseconds)"]
   :data-dir [#(and (string? %) (not (str/blank? %))) "a directory path"]
   :producer [map? "a map of Kafka producer properties"]
   :streams [map? "a map of Kafka Streams properties"]})

(defn check
  "`opts` (the `:events` map without `:type`) merged over `defaults`, validated: an unknown key or a bad value
  throws ex-info {:type :herald.feed/config :key [:events k] :value v} naming both."
  [opts]
  (doseq [[k v] opts]
    (if-let [[ok? what] (spec k)]
      (when-not (ok? v)
        (throw (ex-info (str ":events option " k " must be " what ", got " (pr-str v))
                        {:type :herald.feed/config :key [:events k] :value v})))
      (throw (ex-info (str "unknown :events option " k ", expected one of :type " (str/join " " (sort (keys spec))))
                      {:type :herald.feed/config :key [:events k] :value v}))))
  (merge defaults opts))

(defn posts-topic "The topic of post records." [{:keys [topic-prefix]}] (str topic-prefix "posts"))
(defn ids-topic "The one-partition topic whose offsets are post id blocks." [{:keys [topic-prefix]}] (str topic-prefix "post-ids"))
(defn dead-letter-topic
  "The topic of the records of the posts topic that a job could not apply (see herald.feed.jobs.derived)."
  [{:keys [topic-prefix]}]
  (str topic-prefix "posts-dead-letter"))

(defn partition-of
  "The partition of a topic of `n` partitions that the producer's default partitioner gives key `k` (as `send!`
  sends it: its string's UTF-8 bytes)."
  ^long [k ^long n]
  (mod (Utils/toPositive (Utils/murmur2 (.getBytes (str k) "UTF-8"))) n))

(defn- props ^Properties [m]
  (doto (Properties.) (.putAll (into {} (map (fn [[k v]] [(if (keyword? k) (name k) (str k)) (str v)])) m))))

(defn- unavailable [what ^Throwable e]
  (let [c (if (and (instance? ExecutionException e) (.getCause e)) (.getCause e) e)]
    (ex-info (str "Kafka: " what " failed: " (.getMessage ^Throwable c))
             {:type :herald.feed/unavailable :operation what} c)))

(defn create-topics!
  "Creates `topics` (NewTopic values) on the brokers at `bootstrap-servers` when missing; an existing topic is
  left as it is. A failure, or no answer within `timeout-ms`, throws `(fail topic-name cause)`. The one topic
  creation routine of the feed (the event log's topics here, the per-minute job's in herald.feed.jobs.perf-kafka)."
  [bootstrap-servers topics timeout-ms fail]
  (with-open [admin (Admin/create (props {"bootstrap.servers" bootstrap-servers
                                          "default.api.timeout.ms" timeout-ms
                                          "request.timeout.ms" (min 30000 (long timeout-ms))
                                          ;; an unreachable broker: Kafka's clients log each reconnection try
                                          "reconnect.backoff.max.ms" 10000}))]
    (doseq [[^NewTopic t f] (map vector topics (vals (.values (.createTopics admin ^java.util.Collection topics))))]
      (try (.get ^org.apache.kafka.common.KafkaFuture f (long timeout-ms) TimeUnit/MILLISECONDS)
           (catch ExecutionException e
             (when-not (instance? TopicExistsException (.getCause e))
               (throw (fail (.name t) (.getCause e)))))
           (catch TimeoutException e (throw (fail (.name t) e)))))))

(defn ensure-topics!
  "Creates the posts topic (`:partitions`, `:replication-factor`, `:min-insync-replicas`, `:retention-ms`), the
  ids topic and the dead-letter topic (one partition each) when missing; an existing topic is left as it is.
  Returns {:posts name :ids name :dead-letter name}. Throws :herald.feed/unavailable when the brokers cannot be
  reached within `:send-timeout-ms`."
  [{:keys [bootstrap-servers partitions replication-factor min-insync-replicas retention-ms send-timeout-ms] :as o}]
  (let [cfg (cond-> {} min-insync-replicas (assoc "min.insync.replicas" (str min-insync-replicas)))]
    (create-topics! bootstrap-servers
                    [(doto (NewTopic. ^String (posts-topic o) (int partitions) (short replication-factor))
                       (.configs (assoc cfg "retention.ms" (str retention-ms))))
                     (doto (NewTopic. ^String (ids-topic o) (int 1) (short replication-factor)) (.configs cfg))
                     (doto (NewTopic. ^String (dead-letter-topic o) (int 1) (short replication-factor))
                       (.configs (assoc cfg "retention.ms" (str retention-ms))))]
                    send-timeout-ms
                    (fn [topic cause] (unavailable (str "creating topic " topic) cause)))
    {:posts (posts-topic o) :ids (ids-topic o) :dead-letter (dead-letter-topic o)}))

(def ^:private ^Serializer value-serializer
  "Record values: a byte array as it is (`record-bytes`), a string as its UTF-8 bytes (`edn-text`)."
  (reify Serializer
    (serialize [_ _ v]
      (cond (nil? v) nil
            (bytes? v) v
            :else (.getBytes (str v) StandardCharsets/UTF_8)))))

(defn producer
  "The idempotent producer of the log: acks=all, enable.idempotence (a retried send is written once, in order
  per partition), `:linger-ms`, `:send-timeout-ms` as delivery.timeout.ms, no compression; `:producer`
  properties on top. Keys are strings; values byte arrays (`record-bytes`) or strings (`edn-text`).
  Why no compression: a publish waits for its acknowledgement, so a batch holds one or two post records of a few
  hundred bytes; lz4 allocated a 64 KiB block buffer per batch (a quarter of an instance's allocation, profiled
  2026-11-26, bench/results/feed-instance-profile.md) and made the broker decompress every batch to validate it.
  `:producer {\"compression.type\" \"lz4\"}` brings it back."
  ^KafkaProducer [{:keys [bootstrap-servers linger-ms send-timeout-ms] :as o}]
  (KafkaProducer. (props (merge {"bootstrap.servers" bootstrap-servers "acks" "all" "enable.idempotence" "true"
                                 "max.in.flight.requests.per.connection" "5" "linger.ms" linger-ms
                                 "delivery.timeout.ms" send-timeout-ms
                                 "request.timeout.ms" (min (quot (long send-timeout-ms) 2) 30000)
                                 "max.block.ms" send-timeout-ms "compression.type" "none"
                                 "client.id" (str "herald-feed-" (.pid (ProcessHandle/current)) "-" (System/identityHashCode o))}
                                (:producer o)))
                  (StringSerializer.) value-serializer))

(defn consumer
  "A consumer of the log's records as byte arrays (keys and values), auto commit off, reading from the earliest
  offset where it has none; in consumer group `group` when given; `extra` properties on top (the feed's one
  consumer builder: the re-drive's, and the per-minute recorder's with read_committed and a reconnect backoff)."
  (^KafkaConsumer [o group] (consumer o group nil))
  (^KafkaConsumer [{:keys [bootstrap-servers]} group extra]
   (KafkaConsumer. (props (cond-> (merge {"bootstrap.servers" bootstrap-servers "enable.auto.commit" "false"
                                          "auto.offset.reset" "earliest"}
                                         extra)
                            group (assoc "group.id" group)))
                   (ByteArrayDeserializer.) (ByteArrayDeserializer.))))

(def idle-consumer-config
  "Kafka Streams properties that cut what a job's consumers cost while nothing is due: a classic consumer's
  heartbeat thread wakes every `retry.backoff.ms` (100 ms by default) to poll its connections, and takes the
  coordinator's lock the stream thread also takes (6.5% of an idle instance's CPU with the three jobs, profiled
  2026-11-26); at 500 ms it wakes a fifth as often, still four times per heartbeat interval (2 s). A failed
  fetch or offset request is retried after 500 ms instead of 100 ms (growing to `retry.backoff.max.ms`, 1 s)."
  {"consumer.retry.backoff.ms" 500})

(defn edn-text
  "`x` as EDN text (as herald.flow's :edn serde writes and reads it)."
  ^String [x]
  (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false]
    (pr-str x)))

(defn record-bytes
  "`x` in herald.flow's binary record codec (herald.flow.log.RecordCodec), which every reader of the posts topic
  decodes, as it decodes EDN text: ~1 us to write and to read a post record where EDN text takes ~70 us to print
  and ~40 us to read, twice per post (the fan-out and the index job) (bench/results/feed-scale.md)."
  ^bytes [x]
  (RecordCodec/encode x))

(defn send!
  "Appends `value` (a byte array or a string) under `key` to `topic` and waits for the brokers' acknowledgement (acks=all);
  returns the RecordMetadata. Throws ex-info :herald.feed/unavailable when it is not acknowledged in
  `timeout-ms` (the record may still be written: the caller answers an error, and a reader may see the post).
  `timeout-ms` nil: no timer of its own, the producer's bounds only: `.send` blocks at most `max.block.ms` (for
  metadata or buffer space) and its future completes at the latest `delivery.timeout.ms` after `.send` returned
  (both `:send-timeout-ms` in `producer`: a wait of at most twice that). The request path passes nil: a timed wait
  on a virtual thread arms a timer of JDK 25's delay scheduler for every post (with the Jedis and PostgreSQL
  socket timeouts ~4.6% of an instance's samples, bench/results/feed-scale.md, session 11) for a bound the
  producer keeps anyway."
  ^RecordMetadata [^KafkaProducer p ^String topic key value timeout-ms]
  (try
    (let [f (.send p (ProducerRecord. topic (some-> key str) value))]
      (if timeout-ms (.get f (long timeout-ms) TimeUnit/MILLISECONDS) (.get f)))
    (catch ExecutionException e (throw (unavailable (str "appending to " topic) e)))
    (catch TimeoutException e (throw (unavailable (str "appending to " topic " (no acknowledgement in " timeout-ms " ms)") e)))
    (catch org.apache.kafka.common.KafkaException e (throw (unavailable (str "appending to " topic) e)))))

(defn lease-block!
  "A new post id block for this instance: the offset of a record appended to the ids topic (see
  herald.feed.events.ids)."
  ^long [^KafkaProducer p o]
  (.offset (send! p (ids-topic o) nil (edn-text {:host (.getHostName (java.net.InetAddress/getLocalHost))
                                                 :pid (.pid (ProcessHandle/current))
                                                 :at (System/currentTimeMillis)})
                  (:send-timeout-ms o))))
