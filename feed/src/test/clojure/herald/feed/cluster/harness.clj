(ns herald.feed.cluster.harness
  "Runs bin/herald-cluster for the cluster tests: `up` in a temporary directory (instances on this test JVM's own
  classpath, a watchdog that stops everything if this JVM dies), `kill` and `start` of an instance or a server,
  `down`; a server that cannot start becomes a skip reason, an instance that cannot start an error."
  (:require [herald.feed.child-jvm :as child-jvm]
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
  "Runs `bin/herald-cluster args` (output to files under dir, never a pipe a daemon could keep open); returns
  {:exit n :out s :err s}, :exit -1 after timeout-s."
  [^File dir args timeout-s]
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

(defn up!
  "Starts a cluster of n instances in a new temporary directory. Returns {:dir :balancer :instances}, or
  {:dir :skip reason} when a server (or the tools: no script, no JDK 17, no Debian package) cannot start, or
  {:dir :error reason} when a feed instance cannot (a failure of the feed, not of the machine)."
  [n]
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-cluster-test" (make-array java.nio.file.attribute.FileAttribute 0)))]
    (if-not (script)
      {:dir dir :skip "bin/herald-cluster not found (tests run in feed/ or the repository root)"}
      (let [t0 (System/currentTimeMillis)
            {:keys [exit out err]} (run-script! dir ["up" "--dir" (str dir) "--instances" (str n)] 900)
            ms (- (System/currentTimeMillis) t0)
            failed (not-started err)
            why (str "bin/herald-cluster up exited with " exit ":\n" (str/join "\n" (take-last 40 (str/split-lines err))))]
        (cond
          (and (zero? (long exit)) (= n (count (:instances (endpoints out)))))
          (do (println (str "cluster test: " n " instances up in " ms " ms under " dir))
              (assoc (endpoints out) :dir dir :up-ms ms))
          (some #(str/starts-with? % "instance") failed) {:dir dir :error why}
          :else {:dir dir :skip why})))))

(defn kill!
  "SIGKILL of instance i (a number) or a server (\"kafka\", \"opensearch\", ...); throws when the script fails."
  [{:keys [dir]} target]
  (let [{:keys [exit err]} (run-script! dir ["kill" "--dir" (str dir) (str target)] 60)]
    (when-not (zero? (long exit))
      (throw (ex-info (str "kill " target " failed: " err) {:type ::script-failed :target target})))))

(defn start!
  "Starts instance i or a server again and returns once it is ready; throws when it does not come up."
  [{:keys [dir]} target]
  (let [{:keys [exit err]} (run-script! dir ["start" "--dir" (str dir) (str target)] 600)]
    (when-not (zero? (long exit))
      (throw (ex-info (str "start " target " failed: " err) {:type ::script-failed :target target})))))

(defn down!
  "Stops everything of the cluster and deletes its directory; when keep-logs? is true the logs are kept and the
  processes stop cleanly, else they are killed at once (`down --now`: no test asserts on their clean stop, and the
  data is deleted anyway; a clean stop of the five servers and three instances took ~25 s)."
  [{:keys [^File dir]} keep-logs?]
  (let [{:keys [exit err]} (run-script! dir (cond-> ["down" "--dir" (str dir)] (not keep-logs?) (conj "--now")) 300)]
    (when-not (zero? (long exit)) (println "cluster test: down failed:" err))
    (if keep-logs?
      (println "cluster test: logs kept under" (str dir))
      (doseq [^File f (reverse (file-seq dir))] (.delete f)))))
