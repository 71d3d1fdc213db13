(ns herald.feed.servers.kafka-perf
  "One real Kafka broker (KRaft, broker and controller in one node) in this JVM on 127.0.0.1 for the per-minute figures' cluster tests, started on first use; a broker that cannot start makes the tests skip with the reason."
  (:require [clojure.java.io :as io]
            [clojure.test :as t])
  (:import (java.io ByteArrayOutputStream File PrintStream)
           (java.net ServerSocket)
           (java.util Properties)
           (kafka.server KafkaConfig KafkaRaftServer)
           (kafka.tools StorageTool)
           (org.apache.kafka.common Uuid)
           (org.apache.kafka.common.utils Exit Exit$Procedure Time)))

(set! *warn-on-reflection* true)

(defn- free-port ^long []
  (with-open [s (ServerSocket. 0 50 (java.net.InetAddress/getLoopbackAddress))] (.getLocalPort s)))

(defn- delete-tree! [^File f]
  (when (.isDirectory f) (run! delete-tree! (.listFiles f)))
  (.delete f))

(defn- properties ^Properties [^File dir port cport]
  (doto (Properties.)
    (.putAll {"process.roles" "broker,controller" "node.id" "1"
              "controller.quorum.voters" (str "1@127.0.0.1:" cport)
              "listeners" (str "PLAINTEXT://127.0.0.1:" port ",CONTROLLER://127.0.0.1:" cport)
              "advertised.listeners" (str "PLAINTEXT://127.0.0.1:" port)
              "controller.listener.names" "CONTROLLER" "inter.broker.listener.name" "PLAINTEXT"
              "listener.security.protocol.map" "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
              "log.dirs" (.getPath dir) "auto.create.topics.enable" "false" "num.partitions" "1"
              "offsets.topic.replication.factor" "1" "offsets.topic.num.partitions" "2"
              "transaction.state.log.replication.factor" "1" "transaction.state.log.min.isr" "1"
              "transaction.state.log.num.partitions" "2" "share.coordinator.state.topic.replication.factor" "1"
              "group.initial.rebalance.delay.ms" "0"})))

(defn- start! []
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-feed-kafka-" (make-array java.nio.file.attribute.FileAttribute 0)))
        port (free-port) cport (free-port)
        props (properties dir port cport)
        props-file (io/file dir "server.properties")
        out (ByteArrayOutputStream.)]
    (with-open [w (io/writer props-file)] (.store props w nil))
    (let [rc (StorageTool/execute (into-array String ["format" "-t" (str (Uuid/randomUuid)) "-c" (.getPath props-file)])
                                  (PrintStream. out true))]
      (when-not (zero? rc) (throw (ex-info (str "kafka storage format failed: " out) {:type ::format-failed :rc rc}))))
    ;; Kafka's fatal-fault path throws instead of halting this JVM: a broker that cannot start is a skip
    (let [p (reify Exit$Procedure
              (execute [_ code msg] (throw (ex-info (str "the broker asked to exit with " code ": " msg) {:type ::exit :code code}))))]
      (Exit/setExitProcedure p)
      (Exit/setHaltProcedure p))
    (let [server (KafkaRaftServer. (KafkaConfig/fromProps props) Time/SYSTEM)]
      (.startup server)
      (.addShutdownHook (Runtime/getRuntime)
                        (Thread. ^Runnable (fn [] (try (.shutdown server) (.awaitShutdown server) (catch Throwable _ nil))
                                             (delete-tree! dir))))
      {:bootstrap (str "127.0.0.1:" port) :server server :dir dir})))

(def ^:private broker (delay (try (start!) (catch Throwable e {:error e}))))

(defn bootstrap
  "The bootstrap address of the test broker (started on first use, stopped when the JVM exits), or nil."
  []
  (:bootstrap @broker))

(defmacro with-broker
  "Runs body with `sym` bound to the broker's bootstrap address, or reports the test skipped with the reason."
  [sym & body]
  `(if-let [~sym (bootstrap)]
     (do ~@body)
     (t/do-report {:type :skip :message (str "no Kafka broker: " (some-> (:error @@#'broker) str))})))
