(ns herald.feed.servers.cassandra
  "A Cassandra 5.0 node for the tests: a child JVM on JDK 17 on 127.0.0.1, started once per test JVM and killed
  when the JVM exits (a watchdog kills it too if the test JVM dies without exiting)."
  (:require [clojure.java.io :as io]
            [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :as t])
  (:import (java.io File)
           (java.lang ProcessHandle)
           (java.net InetSocketAddress ServerSocket Socket)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

;; The driver closes a session after a 2 s quiet period of its two Netty event loop groups (its reference.conf),
;; and the tests open and close a session or more per test: with no quiet period a close takes ~0.1 s instead of
;; ~2 s (most of a Cassandra test's time). 100 ms, not 0: with none, a listener completing just after the close logs
;; a RejectedExecutionException. System properties override the driver's configuration, the programmatic loader of
;; herald.feed.store.cassandra.session too; they are set when this namespace loads, before any session is made,
;; unless set already (-D on the command line).
(doseq [group ["io-group" "admin-group"]
        [k v] [["quiet-period" "100"] ["timeout" "15000"] ["unit" "MILLISECONDS"]]
        :let [prop (str "datastax-java-driver.advanced.netty." group ".shutdown." k)]
        :when (nil? (System/getProperty prop))]
  (System/setProperty prop v))
;; A node back after an outage (a test's proxy cut) is reconnected within 1 s instead of the driver's exponential
;; 1, 2, 4, 8 ... 60 s schedule, which made a test wait up to as long as the cut had lasted (the re-drive test
;; 4-25 s); the tests that wait for it assert the same, sooner.
(doseq [[k v] [["base-delay" "250 milliseconds"] ["max-delay" "1 second"]]
        :let [prop (str "datastax-java-driver.advanced.reconnection-policy." k)]
        :when (nil? (System/getProperty prop))]
  (System/setProperty prop v))
(com.typesafe.config.ConfigFactory/invalidateCaches)

(def ^:private start-timeout-ms
  "How long the node may take to open its CQL port (a busy 2-core machine needs ~45 s; it starts early, beside the
  cluster test's servers)."
  300000)

(def ^:private jvm-options
  "What Cassandra's conf/jvm17-server.options adds to run on JDK 17, plus a small heap."
  (into ["-Xms256m" "-Xmx768m" "-XX:+UseSerialGC" "-Xss512k" "-XX:+ExitOnOutOfMemoryError"
         "-Djdk.attach.allowAttachSelf=true" "-Dcassandra-foreground=yes"
         "-Dcassandra.skip_wait_for_gossip_to_settle=0" "-Dcassandra.ring_delay_ms=0"
         ;; no flush of the schema and system tables per change: a test node's DDL is then quick
         "-Dcassandra.test.flush_local_schema_changes=false" "-Dcassandra.unsafesystem=true"]
        (concat
         (mapcat #(vector "--add-exports" %)
                 ["java.base/jdk.internal.misc=ALL-UNNAMED" "java.base/jdk.internal.ref=ALL-UNNAMED"
                  "java.base/sun.nio.ch=ALL-UNNAMED" "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED"
                  "java.rmi/sun.rmi.registry=ALL-UNNAMED" "java.rmi/sun.rmi.server=ALL-UNNAMED"
                  "java.sql/java.sql=ALL-UNNAMED" "java.base/java.lang.ref=ALL-UNNAMED"
                  "jdk.unsupported/sun.misc=ALL-UNNAMED"])
         (mapcat #(vector "--add-opens" %)
                 ["java.base/java.lang.module=ALL-UNNAMED" "java.base/jdk.internal.loader=ALL-UNNAMED"
                  "java.base/jdk.internal.ref=ALL-UNNAMED" "java.base/jdk.internal.reflect=ALL-UNNAMED"
                  "java.base/jdk.internal.math=ALL-UNNAMED" "java.base/jdk.internal.module=ALL-UNNAMED"
                  "java.base/jdk.internal.util.jar=ALL-UNNAMED" "jdk.management/com.sun.management.internal=ALL-UNNAMED"
                  "java.base/sun.nio.ch=ALL-UNNAMED" "java.base/java.io=ALL-UNNAMED" "java.base/java.nio=ALL-UNNAMED"
                  "java.base/java.util.concurrent=ALL-UNNAMED" "java.base/java.util=ALL-UNNAMED"
                  "java.base/java.util.concurrent.atomic=ALL-UNNAMED" "java.base/java.lang=ALL-UNNAMED"
                  "java.base/java.math=ALL-UNNAMED" "java.base/java.lang.reflect=ALL-UNNAMED"
                  "java.base/java.net=ALL-UNNAMED"]))))

(defn- fail [msg] (throw (ex-info msg {:type ::unavailable})))

(defn- java-17
  "The java executable of a JDK 17: $HERALD_CASSANDRA_JAVA, /usr/lib/jvm/*17*, or `java` when it is 17."
  []
  (or (when-let [j (System/getenv "HERALD_CASSANDRA_JAVA")]
        (if (.canExecute (io/file j)) j (fail (str "HERALD_CASSANDRA_JAVA=" j " is not an executable"))))
      (->> (.listFiles (io/file "/usr/lib/jvm"))
           (filter #(re-find #"(^|\D)17(\D|$)" (.getName ^File %)))
           (map #(io/file % "bin/java"))
           (filter #(.canExecute ^File %))
           (map str) sort first)
      (let [{:keys [err]} (try (sh/sh "java" "-version") (catch Exception _ {:err ""}))]
        (when (re-find #"version \"17\." err) "java"))
      (fail "no JDK 17 found (/usr/lib/jvm/*17*, java on PATH, $HERALD_CASSANDRA_JAVA): Cassandra 5.0 needs JDK 17")))

(defn- server-dir ^File []
  (or (first (filter #(.exists (io/file % "pom.xml")) [(io/file "servers/cassandra") (io/file "feed/servers/cassandra")]))
      (fail "feed/servers/cassandra/pom.xml not found from the working directory")))

(defn- classpath
  "cassandra-all's classpath, resolved by Maven apart from ours (offline first, then from Maven Central) and kept
  in target/cassandra/classpath.txt."
  [^File target]
  (let [f (io/file target "cassandra/classpath.txt")
        resolve (fn [& flags]
                  (apply sh/sh "mvn" "-q" "-B" (concat flags ["-f" (str (io/file (server-dir) "pom.xml"))
                                                              "dependency:build-classpath"
                                                              (str "-Dmdep.outputFile=" (.getAbsolutePath f))])))]
    (when-not (.exists f)
      (io/make-parents f)
      (let [r (resolve "-o")]
        (when-not (zero? (long (:exit r)))
          (let [r (resolve)]
            (when-not (zero? (long (:exit r)))
              (fail (str "cannot resolve cassandra-all 5.0.9 (no network?): " (str/trim (str (:out r) (:err r))))))))))
    (str/trim (slurp f))))

(defn- free-ports
  "n distinct free ports (bound together, then released)."
  [n]
  (let [ss (vec (repeatedly n #(ServerSocket. 0)))]
    (try (mapv #(.getLocalPort ^ServerSocket %) ss) (finally (run! #(.close ^ServerSocket %) ss)))))

(defn- port-taken?
  "True when the node in dir stopped because another process took one of its ports between their choice and its
  bind (a JVM start later, on a busy machine)."
  [^File dir]
  (boolean (some #(and (.exists ^File %) (re-find #"is in use by another process|Address already in use" (slurp %)))
                 [(io/file dir "stdout.log") (io/file dir "system.log")])))

(defn- write-config! [^File dir ports]
  (let [yaml (reduce-kv (fn [s k v] (str/replace s (str "@@" k "@@") (str v)))
                        (slurp (io/file (server-dir) "cassandra.yaml"))
                        (assoc ports "DIR" (.getAbsolutePath dir)))]
    (spit (io/file dir "cassandra.yaml") yaml)
    (spit (io/file dir "logback.xml")
          (str "<configuration><appender name=\"F\" class=\"ch.qos.logback.core.FileAppender\"><file>"
               (.getAbsolutePath (io/file dir "system.log")) "</file><encoder><pattern>%d %-5level [%thread] %logger{20} - %msg%n"
               "</pattern></encoder></appender><root level=\"INFO\"><appender-ref ref=\"F\"/></root></configuration>"))))

(defn- port-open? [^long port]
  (try (with-open [s (Socket.)] (.connect s (InetSocketAddress. "127.0.0.1" (int port)) 500) true)
       (catch java.io.IOException _ false)))

(defn- tail [^File f]
  (if (.exists f) (str/join "\n" (take-last 15 (str/split-lines (slurp f)))) ""))

(defn- await-port! [^Process p ^long port ^File dir]
  (let [deadline (+ (System/currentTimeMillis) (long start-timeout-ms))]
    (loop []
      (cond (port-open? port) true
            (not (.isAlive p)) (fail (str "the Cassandra node exited:\n" (tail (io/file dir "stdout.log"))
                                          "\n" (tail (io/file dir "system.log"))))
            (> (System/currentTimeMillis) deadline)
            (do (.destroy p) (.waitFor p 5 TimeUnit/SECONDS) (fail (str "the Cassandra node did not open its CQL port in " start-timeout-ms " ms")))
            :else (do (Thread/sleep 250) (recur))))))

(defn- delete-tree! [dir]
  (doseq [^File f (reverse (file-seq (io/file dir)))] (.delete f)))

(defn- start!
  "Starts a node: {:contact-point \"127.0.0.1:port\" :process p :dir dir :started-ms n}. A node whose port was
  taken by another process before it bound it is started again on new ports (at most 3 tries)."
  ([] (start! 1))
  ([attempt]
    (let [target (io/file (.getParentFile (server-dir)) ".." "target")
          java (java-17)
          cp (classpath target)
          dir (io/file target (str "cassandra-node-" (.pid (ProcessHandle/current))))
          [native storage ssl] (free-ports 3)
          ports {"NATIVE_PORT" native "STORAGE_PORT" storage "SSL_STORAGE_PORT" ssl}
          t0 (System/currentTimeMillis)]
      (delete-tree! dir)
      (.mkdirs dir)
      (write-config! dir ports)
      (let [cmd (concat [java] jvm-options
                        [(str "-Dcassandra.config=file://" (.getAbsolutePath (io/file dir "cassandra.yaml")))
                         (str "-Dcassandra.storagedir=" (.getAbsolutePath dir))
                         (str "-Dcassandra.logdir=" (.getAbsolutePath dir))
                         (str "-Dlogback.configurationFile=" (.getAbsolutePath (io/file dir "logback.xml")))
                         "-cp" cp "org.apache.cassandra.service.CassandraDaemon"])
            ;; the watchdog shell kills the node when the test JVM is gone or the shell is told to stop
            watchdog (str "\"$@\" & c=$!; trap 'kill -9 $c 2>/dev/null; exit 0' TERM INT EXIT; "
                          "while kill -0 " (.pid (ProcessHandle/current)) " 2>/dev/null && kill -0 $c 2>/dev/null; do sleep 1; done")
            log (io/file dir "stdout.log")
            p (-> (ProcessBuilder. ^java.util.List (into ["bash" "-c" watchdog "cassandra"] cmd))
                  (.redirectErrorStream true)
                  (.redirectOutput log)
                  (.start))]
        (if-let [e (try (await-port! p native dir) nil
                        (catch Throwable e (.destroy p) (.waitFor p 15 TimeUnit/SECONDS) e))]
          (if (and (< (long attempt) 3) (port-taken? dir))
            (start! (inc (long attempt)))
            (throw e))
          {:contact-point (str "127.0.0.1:" native) :process p :dir dir
           :started-ms (- (System/currentTimeMillis) t0)})))))

(defn- stop! [{:keys [^Process process dir]}]
  (when process
    (.destroy process)
    (.waitFor process 15 TimeUnit/SECONDS)
    (delete-tree! dir)))

(defonce ^:private node
  (delay
    (if-let [cp (System/getenv "HERALD_CASSANDRA")]
      {:contact-point cp :started-ms 0}
      (try
        (let [n (start!)]
          (.addShutdownHook (Runtime/getRuntime) (Thread. ^Runnable #(stop! n)))
          (println (str "Cassandra test node on " (:contact-point n) " (started in " (:started-ms n) " ms)"))
          n)
        (catch Exception e {:skip (ex-message e)})))))

(defn ^:herald.test/start-early start-async!
  "Starts the node in the background, if it is not started yet, so that its start overlaps other work (another
  server's start, the tests before the first that uses it: build/test_runner.clj calls it once the test namespaces
  are loaded); a later contact-point waits for it. Returns nil."
  []
  (future @node)
  nil)

(defn contact-point
  "\"127.0.0.1:port\" of the test node (started on first use, or $HERALD_CASSANDRA), or nil after reporting the
  reason it cannot run as a skip."
  []
  (let [n @node]
    (if-let [why (:skip n)]
      (do (t/do-report {:type :skip :message (str "no Cassandra node: " why)}) nil)
      (:contact-point n))))

(defn skip-reason
  "Why there is no test node (waits for its start), or nil."
  []
  (:skip @node))

(defmacro with-node
  "Runs body with sym bound to the node's contact point; reports a skip instead when there is no node."
  [[sym] & body]
  `(when-let [~sym (contact-point)] ~@body))
