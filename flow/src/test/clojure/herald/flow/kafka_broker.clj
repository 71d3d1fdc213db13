(ns herald.flow.kafka-broker
  "One real Kafka broker (KRaft, broker and controller in one node) for the whole test run, started in this JVM on
  127.0.0.1 on first use (a fresh data dir, free ports; stopped and deleted when the JVM exits). The one test broker of
  flow and feed: the feed's tests get it from flow's test-jar (herald-flow, type test-jar)."
  (:require [clojure.edn]
            [clojure.java.io :as io]
            [clojure.test :as t])
  (:import (java.io File PrintStream ByteArrayOutputStream)
           (java.net ServerSocket)
           (java.util Properties)
           (kafka.server KafkaConfig KafkaRaftServer)
           (kafka.tools StorageTool)
           (org.apache.kafka.common Uuid)
           (org.apache.kafka.common.utils Time)))

(set! *warn-on-reflection* true)

(defn- free-port ^long []
  (with-open [s (ServerSocket. 0 50 (java.net.InetAddress/getLoopbackAddress))] (.getLocalPort s)))

(defn- delete-tree! [^File f]
  (when (.isDirectory f) (run! delete-tree! (.listFiles f)))
  (.delete f))

(defn- properties ^Properties [^File dir port cport]
  (doto (Properties.)
    (.putAll {"process.roles" "broker,controller"
              "node.id" "1"
              "controller.quorum.voters" (str "1@127.0.0.1:" cport)
              "listeners" (str "PLAINTEXT://127.0.0.1:" port ",CONTROLLER://127.0.0.1:" cport)
              "advertised.listeners" (str "PLAINTEXT://127.0.0.1:" port)
              "controller.listener.names" "CONTROLLER"
              "inter.broker.listener.name" "PLAINTEXT"
              "listener.security.protocol.map" "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
              "log.dirs" (.getPath dir)
              "auto.create.topics.enable" "false"
              "num.partitions" "1"
              "offsets.topic.replication.factor" "1"
              "offsets.topic.num.partitions" "2"
              "transaction.state.log.replication.factor" "1"
              "transaction.state.log.min.isr" "1"
              "transaction.state.log.num.partitions" "2"
              "share.coordinator.state.topic.replication.factor" "1"
              "group.initial.rebalance.delay.ms" "0"
              "log.flush.interval.messages" "1000000"})))

(defn- no-exit!
  "Makes Kafka's fatal-fault path throw instead of halting this JVM, so a broker that cannot start is a
  skipped test, not a dead test run."
  []
  (let [p (reify org.apache.kafka.common.utils.Exit$Procedure
            (execute [_ code msg] (throw (ex-info (str "the broker asked to exit with " code ": " msg) {:code code}))))]
    (org.apache.kafka.common.utils.Exit/setExitProcedure p)
    (org.apache.kafka.common.utils.Exit/setHaltProcedure p)))

(defn- start! []
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-kafka-" (make-array java.nio.file.attribute.FileAttribute 0)))
        port (free-port) cport (free-port)
        props (properties dir port cport)
        props-file (io/file dir "server.properties")
        out (ByteArrayOutputStream.)]
    (with-open [w (io/writer props-file)] (.store props w nil))
    ;; a fresh data directory, formatted every run
    (let [rc (StorageTool/execute (into-array String ["format" "-t" (str (Uuid/randomUuid)) "-c" (.getPath props-file)])
                                  (PrintStream. out true))]
      (when-not (zero? rc) (throw (ex-info (str "kafka storage format failed: " out) {:rc rc}))))
    (no-exit!)
    (let [server (KafkaRaftServer. (KafkaConfig/fromProps props) Time/SYSTEM)]
      (.startup server)
      (.addShutdownHook (Runtime/getRuntime)
                        (Thread. ^Runnable (fn [] (try (.shutdown server) (.awaitShutdown server) (catch Throwable _ nil))
                                             (delete-tree! dir))))
      {:bootstrap (str "127.0.0.1:" port) :server server :dir dir})))

(def ^:private broker
  (delay (try (start!) (catch Throwable e {:error e}))))

(defn ^:herald.test/start-early start-async!
  "Starts the broker in the background, if it is not started yet (build/test_runner.clj calls it once the test
  namespaces are loaded, so that the start overlaps the tests before the first that uses it). Returns nil."
  []
  (future @broker)
  nil)

(defn bootstrap
  "The bootstrap address of the shared test broker (started on first use, stopped when the JVM exits), or nil
  when it could not start (then the reason is in `failure`)."
  []
  (:bootstrap @broker))

(defn failure
  "Why the broker could not start, or nil."
  []
  (some-> (:error @broker) str))

(defmacro with-broker
  "Runs body with `sym` bound to the broker's bootstrap address, or reports the test skipped with the reason."
  [sym & body]
  `(if-let [~sym (bootstrap)]
     (do ~@body)
     (t/do-report {:type :skip :message (str "no Kafka broker: " (failure))})))

(defn- props ^Properties [m] (doto (Properties.) (.putAll m)))

(defn create-topics!
  "Creates `topics` (names) with `partitions` partitions each on the broker at `bootstrap`."
  [bootstrap topics partitions]
  (with-open [admin (org.apache.kafka.clients.admin.Admin/create (props {"bootstrap.servers" bootstrap}))]
    (.get (.all (.createTopics admin ^java.util.Collection (for [t topics] (org.apache.kafka.clients.admin.NewTopic. ^String t (int partitions) (short 1)))))
          30 java.util.concurrent.TimeUnit/SECONDS)))

(defn produce!
  "Writes `segments` (maps, as EDN text) to `topic`, in order, and waits for the broker's acks."
  [bootstrap topic segments]
  (with-open [p (org.apache.kafka.clients.producer.KafkaProducer.
                 (props {"bootstrap.servers" bootstrap "acks" "all" "linger.ms" "5"})
                 (org.apache.kafka.common.serialization.StringSerializer.)
                 (org.apache.kafka.common.serialization.StringSerializer.))]
    (doseq [s segments]
      (.send p (org.apache.kafka.clients.producer.ProducerRecord. ^String topic nil (pr-str s))))
    (.flush p)))

(defn consumer
  "A read_committed consumer of `topics` from the beginning, values read as EDN."
  ^org.apache.kafka.clients.consumer.KafkaConsumer [bootstrap topics]
  (doto (org.apache.kafka.clients.consumer.KafkaConsumer.
         (props {"bootstrap.servers" bootstrap "group.id" (str "herald-test-" (random-uuid))
                 "auto.offset.reset" "earliest" "isolation.level" "read_committed" "enable.auto.commit" "false"})
         (org.apache.kafka.common.serialization.StringDeserializer.)
         (org.apache.kafka.common.serialization.StringDeserializer.))
    (.subscribe ^java.util.Collection (vec topics))))

(defn poll-until
  "Polls consumer `c` until `(done? records-by-topic)` or `timeout-ms` passes, then `settle-ms` more (to see
  records that should not be there); returns topic -> vector of values (EDN-read)."
  ([c done? timeout-ms] (poll-until c done? timeout-ms 0))
  ([^org.apache.kafka.clients.consumer.KafkaConsumer c done? timeout-ms settle-ms]
   (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))
         acc (volatile! {})
         poll! (fn [] (doseq [^org.apache.kafka.clients.consumer.ConsumerRecord r (.poll c (java.time.Duration/ofMillis 100))]
                        (vswap! acc update (.topic r) (fnil conj []) (clojure.edn/read-string (.value r)))))]
     (loop []
       (poll!)
       (when (and (not (done? @acc)) (< (System/currentTimeMillis) deadline)) (recur)))
     (let [end (+ (System/currentTimeMillis) (long settle-ms))]
       (loop [] (when (< (System/currentTimeMillis) end) (poll!) (recur))))
     @acc)))
