(ns herald.feed.servers.kafka
  "One real Kafka broker (KRaft, broker and controller in one node) for the feed's tests, started in the test JVM on 127.0.0.1 on first use: a fresh data dir, free ports; stopped and deleted when the JVM exits."
  (:require [clojure.java.io :as io]
            [clojure.test :as t])
  (:import (java.io ByteArrayOutputStream File PrintStream)
           (java.net InetAddress ServerSocket)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util Properties)
           (kafka.server KafkaConfig KafkaRaftServer)
           (kafka.tools StorageTool)
           (org.apache.kafka.common Uuid)
           (org.apache.kafka.common.utils Exit Exit$Procedure Time)))

(set! *warn-on-reflection* true)

(defn- free-port ^long []
  (with-open [s (ServerSocket. 0 50 (InetAddress/getLoopbackAddress))] (.getLocalPort s)))

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
  "Makes Kafka's fatal-fault path throw instead of halting this JVM: a broker that cannot start is a skipped
  test, not a dead test run."
  []
  (let [p (reify Exit$Procedure
            (execute [_ code msg] (throw (ex-info (str "the broker asked to exit with " code ": " msg) {:code code}))))]
    (Exit/setExitProcedure p)
    (Exit/setHaltProcedure p)))

(defn- start! []
  (let [dir (.toFile (Files/createTempDirectory "herald-feed-kafka-" (make-array FileAttribute 0)))
        port (free-port) cport (free-port)
        props (properties dir port cport)
        props-file (io/file dir "server.properties")
        out (ByteArrayOutputStream.)]
    (with-open [w (io/writer props-file)] (.store props w nil))
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
  "The bootstrap address of the shared test broker (started on first use), or nil when it could not start
  (the reason is in `failure`)."
  []
  (:bootstrap @broker))

(defn failure
  "Why the broker could not start, or nil."
  []
  (some-> (:error @broker) str))

(defmacro with-kafka
  "Runs body with `sym` bound to the broker's bootstrap address, or reports the test skipped with the reason."
  [sym & body]
  `(if-let [~sym (bootstrap)]
     (do ~@body)
     (t/do-report {:type :skip :message (str "no Kafka broker: " (failure))})))
