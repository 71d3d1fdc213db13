(ns herald.feed.servers.opensearch
  "A real OpenSearch node for the tests: a child JVM on 127.0.0.1, started once per test JVM on first use and
  stopped when the test JVM exits.

  The node's classpath is resolved outside the feed module (OpenSearch 2.19 brings Lucene 9; the feed runs
  Lucene 10) by the standalone project feed/servers/opensearch (pom.xml + herald.servers.OpenSearchMain):
  `mvn -q -o -f feed/servers/opensearch/pom.xml compile dependency:build-classpath` (online when the offline run
  fails, e.g. on a fresh machine), skipped while its outputs are newer than its sources. The child runs on JDK 17
  (the first /usr/lib/jvm/*17*/bin/java, or $HERALD_OPENSEARCH_JAVA), free ports, data in
  feed/target/opensearch-node (wiped at each start). It stops when its stdin closes: at the test JVM's exit (a shutdown
  hook), or when the test JVM dies. HERALD_OPENSEARCH_URL=http://host:port uses that server instead.

  When the node cannot start, `url` returns nil and `skip-reason` says why: tests report SKIPPED, never pass."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed.store.opensearch.http :as http])
  (:import (java.io File)
           (java.net InetAddress ServerSocket)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- project-dir
  "The standalone project's directory (tests run in feed/ or at the repository's root)."
  ^File []
  (some #(let [f (io/file % "pom.xml")] (when (.isFile f) (.getCanonicalFile (io/file %))))
        ["servers/opensearch" "feed/servers/opensearch"]))

(defn- child-java
  "The java executable for the node: $HERALD_OPENSEARCH_JAVA, else a JDK 17 under /usr/lib/jvm, else this JVM's."
  ^String []
  (or (System/getenv "HERALD_OPENSEARCH_JAVA")
      (->> (.listFiles (io/file "/usr/lib/jvm"))
           (filter #(re-find #"17" (.getName ^File %)))
           (map #(io/file ^File % "bin/java"))
           (filter #(.canExecute ^File %))
           (sort-by str)
           first
           (#(some-> ^File % str)))
      (str (io/file (System/getProperty "java.home") "bin" "java"))))

(defn- run-cmd!
  "Runs cmd in dir, output to log; returns the exit status (or -1 after timeout-s)."
  [cmd ^File dir ^File log timeout-s]
  (let [p (-> (ProcessBuilder. ^java.util.List cmd) (.directory dir) (.redirectErrorStream true)
              (.redirectOutput log) (.start))]
    (if (.waitFor p timeout-s TimeUnit/SECONDS) (.exitValue p) (do (.destroyForcibly p) -1))))

(defn- tail [^File f n]
  (if (.isFile f) (str/join "\n" (take-last n (str/split-lines (slurp f)))) ""))

(defn- resolve-classpath!
  "Builds the standalone project when needed; returns [classpath nil] or [nil reason]."
  [^File dir]
  (let [target (io/file dir "target")
        cp-file (io/file target "classpath.txt")
        main (io/file target "classes/herald/servers/OpenSearchMain.class")
        newest-src (apply max (map #(.lastModified ^File %)
                                   (filter #(.isFile ^File %) (cons (io/file dir "pom.xml") (file-seq (io/file dir "src"))))))
        fresh? (and (.isFile cp-file) (.isFile main) (> (.lastModified cp-file) newest-src)
                    (> (.lastModified main) newest-src))]
    (if fresh?
      [(str/trim (slurp cp-file)) nil]
      (let [log (doto (io/file target "mvn.log") (-> .getParentFile .mkdirs))
            mvn (fn [& extra] (run-cmd! (concat ["mvn" "-q" "-B"] extra ["-f" (str (io/file dir "pom.xml")) "compile"
                                                                    "dependency:build-classpath"
                                                                    (str "-Dmdep.outputFile=" cp-file)])
                                    dir log 600))]
        (.delete cp-file)
        (if (or (zero? (long (mvn "-o"))) (zero? (long (mvn))))
          [(str/trim (slurp cp-file)) nil]
          [nil (str "building " dir " failed: " (tail log 15))])))))

(defn- free-port []
  (with-open [s (ServerSocket. 0 1 (InetAddress/getByName "127.0.0.1"))] (.getLocalPort s)))

(defn- delete-tree! [^File f]
  (when (.exists f) (doseq [^File x (reverse (file-seq f))] (.delete x))))

(defn- health [c]
  (try (let [[_ h] (http/request c "health" :get "/_cluster/health")]
         (get h "status"))
       (catch Exception _ nil)))

(defn- closing
  "(f client) with a client for url, closed afterwards."
  [url f]
  (let [c (http/client url 500 2000)]
    (try (f c) (finally (.close ^java.net.http.HttpClient (:http c))))))

(defn- stop-process! [^Process p]
  (try (.close (.getOutputStream p)) (catch Exception _ nil))
  (when-not (.waitFor p 15 TimeUnit/SECONDS)
    (.destroy p)
    (when-not (.waitFor p 5 TimeUnit/SECONDS) (.destroyForcibly p))))

(defn- launch!
  "Starts the node process of cmd (log appended to log) and waits for a green or yellow cluster at url; returns
  [process nil] or [nil reason] (the process stopped)."
  [cmd url ^File log]
  (let [p (-> (ProcessBuilder. ^java.util.List cmd) (.redirectErrorStream true)
              (.redirectOutput (java.lang.ProcessBuilder$Redirect/appendTo log)) (.start))
        deadline (+ (System/currentTimeMillis) 300000)]
    (loop []
      (cond (#{"green" "yellow"} (closing url health)) [p nil]
            (not (.isAlive p)) [nil (str "the OpenSearch node exited with " (.exitValue p) ": " (tail log 20))]
            (> (System/currentTimeMillis) deadline)
            (do (stop-process! p) [nil (str "the OpenSearch node did not start in 300 s: " (tail log 20))])
            :else (do (Thread/sleep 250) (recur))))))

(defn- launch-on-free-ports!
  "Launches the node of project dir on classpath cp with its home and log on two free ports: {:p process :why
  reason :url u :cmd [..]}. A node that could not bind a port (taken by another process between its choice and the
  node's bind, a JVM start later) is launched again on new ports, at most 3 times."
  [^File dir cp ^File home ^File log]
  (loop [attempt 1]
    (let [http-port (free-port)
          url (str "http://127.0.0.1:" http-port)
          cmd [(child-java) "-Xms256m" "-Xmx512m" "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1"
               "-Dlog4j2.disable.jmx=true" "-Dopensearch.set.netty.runtime.available.processors=false"
               "-cp" (str (io/file dir "target/classes") File/pathSeparator cp)
               "herald.servers.OpenSearchMain" (str (.getCanonicalFile home)) (str http-port) (str (free-port))]
          [p why] (launch! cmd url log)]
      (if (and (nil? p) (< attempt 3) (re-find #"BindException|Address already in use" (str why)))
        (recur (inc attempt))
        {:p p :why why :url url :cmd cmd}))))

(defn- start!
  "Starts the node; returns {:url u :process (atom p) :cmd [..] :home dir :started-ms n} or {:skip reason}."
  []
  (if-let [external (System/getenv "HERALD_OPENSEARCH_URL")]
    (if (closing external health) {:url external} {:skip (str "HERALD_OPENSEARCH_URL=" external " does not answer")})
    (if-let [dir (project-dir)]
      (let [t0 (System/currentTimeMillis)
            [cp why] (resolve-classpath! dir)
            build-ms (- (System/currentTimeMillis) t0)]
        (if-not cp
          {:skip why}
          (let [home (io/file (.getParentFile (.getParentFile dir)) "target/opensearch-node")
                _ (delete-tree! home)
                _ (.mkdirs home)
                log (io/file home "node.log")
                {:keys [p why url cmd]} (launch-on-free-ports! dir cp home log)]
            (if-not p
              {:skip why}
              (let [ms (- (System/currentTimeMillis) t0)
                    process (atom p)]
                ;; at the JVM's exit the node is killed, not stopped cleanly: its data is thrown away (deleted at
                ;; the next start) and no test asserts on its stop
                (.addShutdownHook (Runtime/getRuntime)
                                  (Thread. #(when-let [^Process p @process] (.destroyForcibly p) (.waitFor p 10 TimeUnit/SECONDS))))
                (println (str "OpenSearch test node up at " url " in " ms " ms (classpath " build-ms " ms; log: " log ")"))
                {:url url :process process :cmd cmd :home home :started-ms ms})))))
      {:skip "feed/servers/opensearch/pom.xml not found (tests must run in feed/ or the repository root)"})))

(def ^:private node (delay (try (start!) (catch Exception e {:skip (str "cannot start OpenSearch: " e)}))))

(defn start-async!
  "Starts the node in the background, if it is not started yet, so that its start overlaps other work (another
  server's start); a later url or skip-reason waits for it. Returns nil."
  []
  (future @node)
  nil)

(defn url
  "The base URL of the test node (started on first call), or nil when it cannot run (see skip-reason)."
  []
  (:url @node))

(defn skip-reason
  "Why the node is not available, or nil."
  []
  (:skip @node))

(defn started-ms
  "How long the start took (build included), or nil for an external server or none."
  []
  (:started-ms @node))

(defn node-log
  "The node's log file (a File), or nil."
  []
  (some-> (:home @node) (io/file "node.log")))

(def ^:private client (delay (http/client (url) 2000 30000)))

(defn request
  "A request to the test node (see herald.feed.store.opensearch.http/request): [status body]."
  [method path & [body opts]]
  (http/request @client "test" method path body opts))

(defn delete-index!
  "Deletes index on the test node (missing is fine)."
  [index]
  (request :delete (str "/" index) nil {:ok #{200 404}}))

(defn own?
  "True when the test node is a process of this JVM (not HERALD_OPENSEARCH_URL's server): one `kill!` may end."
  []
  (some? (:process @node)))

(defn running?
  "True when the test node's process is alive (false after `kill!` until `restart!`, and for none or an external one)."
  []
  (let [^Process p (some-> (:process @node) deref)]
    (boolean (and p (.isAlive p)))))

(defn kill!
  "Kills the test node (SIGKILL: no flush, no clean shutdown) and waits for its end; `restart!` starts it again.
  Throws when the node is external."
  []
  (let [{:keys [process url]} @node]
    (when-not process (throw (ex-info "the test node is not ours to crash" {:url url})))
    (let [^Process p @process]
      (.destroyForcibly p)
      (.waitFor p 30 TimeUnit/SECONDS)
      nil)))

(defn restart!
  "Starts the test node again after `kill!`, on the same data and ports, and returns once it answers; throws when it
  does not come back."
  []
  (let [{:keys [process cmd url home]} @node
        [p2 why] (launch! cmd url (io/file home "node.log"))]
    (reset! process p2)
    (when-not p2 (throw (ex-info (str "the test node did not restart: " why) {:url url})))
    nil))

(defn crash-and-restart!
  "Kills the test node (SIGKILL: no flush, no clean shutdown), then starts it again on the same data and ports.
  Returns the restart's duration in ms; throws when the node is external or does not come back."
  []
  (let [t0 (System/currentTimeMillis)]
    (kill!)
    (restart!)
    (- (System/currentTimeMillis) t0)))
