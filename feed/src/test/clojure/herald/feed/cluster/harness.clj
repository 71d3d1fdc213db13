(ns herald.feed.cluster.harness
  "Runs bin/herald-cluster for the cluster tests: `up` in a temporary directory (instances on this test JVM's own
  classpath, a watchdog that stops everything if this JVM dies), `kill` and `start` of an instance or a server,
  `down`; a server that cannot start becomes a skip reason, an instance that cannot start an error.

  Cassandra and OpenSearch are this test JVM's shared nodes (herald.feed.servers.cassandra, .opensearch), with a
  fresh keyspace and index, given to the script as external servers: the suite starts each once, not twice (a
  Cassandra and an OpenSearch JVM start were the longest part of `up`). Kafka, PostgreSQL, Redis, the instances and
  HAProxy are the script's. `kill`/`start` of \"opensearch\" SIGKILL and start the shared node again."
  (:require [herald.feed.child-jvm :as child-jvm]
            [herald.feed.servers.cassandra :as cass]
            [herald.feed.servers.opensearch :as osn]
            [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io File)
           (java.lang ProcessBuilder$Redirect ProcessHandle)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- script
  "bin/herald-cluster of this repository (tests run in feed/ or at the root)."
  ^File []
  (some #(let [f (.getCanonicalFile (io/file % "bin/herald-cluster"))] (when (.isFile f) f)) ["." ".."]))

(def ^:private calls (atom 0))

(defn- run-script!
  "Runs `bin/herald-cluster args` with `extra-env` (output to files under dir, never a pipe a daemon could keep
  open); returns {:exit n :out s :err s}, :exit -1 after timeout-s."
  [^File dir extra-env args timeout-s]
  (let [n (swap! calls inc)
        out (io/file dir (str "harness-" n ".out"))
        err (io/file dir (str "harness-" n ".err"))
        pb (doto (ProcessBuilder. ^java.util.List (into ["bash" (str (script))] args))
             (.redirectInput (ProcessBuilder$Redirect/from (io/file "/dev/null")))
             (.redirectOutput out)
             (.redirectError err))
        env (.environment pb)]
    ;; absolute entries: each instance runs in its own directory
    (.put env "HERALD_FEED_CLASSPATH" (str/join File/pathSeparator
                                                (for [e (str/split (child-jvm/classpath) #":")]
                                                  (.getAbsolutePath (io/file e)))))
    (.put env "HERALD_CLUSTER_WATCH_PID" (str (.pid (ProcessHandle/current))))
    ;; thrown away after the test: the Cassandra node's schema is not fsynced (no test kills the node)
    (.put env "HERALD_CLUSTER_DISPOSABLE" "true")
    ;; the instances start sooner (and leave the 2 cores to the servers) on C1 only, as the crash test's child
    (.put env "HERALD_INSTANCE_JVM_OPTS" "-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1")
    (doseq [[k v] extra-env] (.put env k v))
    (let [t0 (System/currentTimeMillis)
          p (.start pb)
          done? (.waitFor p (long timeout-s) TimeUnit/SECONDS)]
      (when-not done? (.destroyForcibly p) (.waitFor p 10 TimeUnit/SECONDS))
      ;; where a run's time goes, in CI's log
      (println (str "cluster test: herald-cluster " (first args) (when (#{"kill" "start"} (first args)) (str " " (last args))) " took "
                    (- (System/currentTimeMillis) t0) " ms"))
      {:exit (if done? (.exitValue p) -1) :out (slurp out) :err (slurp err)})))

(defn- endpoints
  "{:balancer url :instances {i url}} from the endpoint lines of up or status."
  [out]
  {:balancer (second (re-find #"(?m)^balancer (http://\S+)$" out))
   :instances (into (sorted-map) (for [[_ i u] (re-seq #"(?m)^instance (\d+) (http://\S+)$" out)] [(parse-long i) u]))})

(defn- not-started
  "Names the script reported as not started (`herald-cluster: NAME did not start: ...`)."
  [err]
  (map second (re-seq #"herald-cluster: ([a-z]+(?: \d+)?) did not start" err)))

(def ^:private instance-overlay
  "Config deep-merged over the instances' bundled :scale profile (HERALD_CONFIG_OVERLAY) where a test waits for a
  timeout: a dead instance leaves its consumer groups after 6 s of silence instead of 10 (the broker's least), and a
  store write retried through an outage waits at most 1 s between tries instead of 10 (so a server back is written
  to within a second, not up to ten)."
  {:events {:backoff-max-ms 1000 :streams {"session.timeout.ms" 6000 "heartbeat.interval.ms" 1000}}})

(defn- shared-servers
  "The script's environment for this JVM's Cassandra and OpenSearch nodes (started here if not yet) with a fresh
  keyspace and index, and the instances' config overlay; or {:skip reason}."
  [^File dir]
  (osn/start-async!)
  (cass/start-async!)
  (if-let [why (or (some->> (cass/skip-reason) (str "Cassandra: ")) (some->> (osn/skip-reason) (str "OpenSearch: ")))]
    {:skip why}
    (let [overlay (io/file dir "instance-overlay.edn")
          tag (str (Long/toString (System/currentTimeMillis) 36))]
      (spit overlay (pr-str instance-overlay))
      (cond-> {"HERALD_CLUSTER_CASSANDRA" (cass/contact-point) "CASSANDRA_KEYSPACE" (str "cluster_" tag)
               "HERALD_CONFIG_OVERLAY" (.getAbsolutePath overlay)}
        ;; a HERALD_OPENSEARCH_URL server is not ours to kill: then the script runs its own
        (osn/own?) (assoc "HERALD_CLUSTER_OPENSEARCH" (osn/url) "OPENSEARCH_INDEX" (str "cluster-" tag))))))

(defn- shared-opensearch? [env] (contains? env "HERALD_CLUSTER_OPENSEARCH"))

(defn up!
  "Starts a cluster of n instances in a new temporary directory. Returns {:dir :env :balancer :instances}, or
  {:dir :skip reason} when a server (or the tools: no script, no JDK 17, no Debian package) cannot start, or
  {:dir :error reason} when a feed instance cannot (a failure of the feed, not of the machine)."
  [n]
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-cluster-test" (make-array java.nio.file.attribute.FileAttribute 0)))
        env (when (script) (shared-servers dir))]
    (cond
      (not (script)) {:dir dir :skip "bin/herald-cluster not found (tests run in feed/ or the repository root)"}
      (:skip env) {:dir dir :skip (:skip env)}
      :else
      (let [t0 (System/currentTimeMillis)
            {:keys [exit out err]} (run-script! dir env ["up" "--dir" (str dir) "--instances" (str n)] 900)
            ms (- (System/currentTimeMillis) t0)
            failed (not-started err)
            why (str "bin/herald-cluster up exited with " exit ":\n" (str/join "\n" (take-last 40 (str/split-lines err))))]
        (cond
          (and (zero? (long exit)) (= n (count (:instances (endpoints out)))))
          (do (println (str "cluster test: " n " instances up in " ms " ms under " dir))
              (assoc (endpoints out) :dir dir :env env :up-ms ms))
          (some #(str/starts-with? % "instance") failed) {:dir dir :error why}
          :else {:dir dir :skip why})))))

(defmacro ^:private timed
  "Runs body and prints how long it took, as run-script! does for the script's commands."
  [what & body]
  `(let [t0# (System/currentTimeMillis) v# (do ~@body)]
     (println (str "cluster test: " ~what " took " (- (System/currentTimeMillis) t0#) " ms"))
     v#))

(defn- on-target!
  "Runs the script's `verb` (\"kill\", \"start\") on `target` (waiting at most `timeout-s`), or `(shared)` when
  target is the test JVM's shared OpenSearch node; throws when the script fails."
  [{:keys [dir env]} verb target timeout-s shared]
  (if (and (= "opensearch" (str target)) (shared-opensearch? env))
    (timed (str verb " of the shared OpenSearch node") (shared))
    (let [{:keys [exit err]} (run-script! dir env [verb "--dir" (str dir) (str target)] timeout-s)]
      (when-not (zero? (long exit))
        (throw (ex-info (str verb " " target " failed: " err) {:type ::script-failed :target target}))))))

(defn kill!
  "SIGKILL of instance i (a number) or a server (\"kafka\", \"opensearch\", ...); throws when the script fails."
  [c target]
  (on-target! c "kill" target 60 osn/kill!))

(defn start!
  "Starts instance i or a server again and returns once it is ready; throws when it does not come up."
  [c target]
  (on-target! c "start" target 600 osn/restart!))

(defn down!
  "Stops everything of the cluster and deletes its directory; when keep-logs? is true the logs are kept and the
  processes stop cleanly, else they are killed at once (`down --now`: no test asserts on their clean stop, and the
  data is deleted anyway; a clean stop of the five servers and three instances took ~25 s)."
  [{:keys [^File dir env]} keep-logs?]
  (let [{:keys [exit err]} (run-script! dir env (cond-> ["down" "--dir" (str dir)] (not keep-logs?) (conj "--now")) 300)]
    (when-not (zero? (long exit)) (println "cluster test: down failed:" err))
    ;; the shared OpenSearch node outlives the cluster: a test that failed while it was killed leaves it running
    (when (and (shared-opensearch? env) (not (osn/running?)))
      (try (osn/restart!) (catch Exception e (println "cluster test: the shared OpenSearch node did not restart:" (ex-message e)))))
    (if keep-logs?
      (println "cluster test: logs kept under" (str dir))
      (doseq [^File f (reverse (file-seq dir))] (.delete f)))))
