(ns herald.load.agent-test
  "Distributed generators with real agent processes (child JVMs running `herald-load agent`) on loopback
  against herald.http started in this JVM: the split, exact merged percentiles (against the union of the
  agents' own .hlog records), the total rate, an agent behind its share, an agent killed mid-run, a busy
  agent, bad --agents values, the feed workload split by users, and agents in other network namespaces."
  (:require [clojure.java.io :as io]
            [clojure.java.shell :as shell]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.load.impl.agent-coordinator :as coordinator]
            [herald.load.impl.agent-wire :as wire]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.output :as output]
            [herald.load.main :as main]
            [herald.load.test-server :as ts]
            [herald.load.tls-support :refer [with-http-server]])
  (:import (java.io BufferedReader DataInputStream DataOutputStream InputStreamReader)
           (java.net Socket)
           (java.util.concurrent TimeUnit)
           (org.HdrHistogram Histogram HistogramLogReader)))

(set! *warn-on-reflection* true)

(defn- tmp-dir ^java.io.File []
  (.toFile (java.nio.file.Files/createTempDirectory "herald-agent" (make-array java.nio.file.attribute.FileAttribute 0))))

(defn start-agent
  "Starts `herald-load agent` in a child JVM (this JVM's classpath) on 127.0.0.1 and a free port, keeping
  its own .hlog records in a new directory; `prefix` (e.g. [\"ip\" \"netns\" \"exec\" NS]) wraps the command.
  Returns {:process :port :name :hlog-dir}."
  ([] (start-agent [] "127.0.0.1"))
  ([prefix host]
   (let [dir (tmp-dir)
         java (str (System/getProperty "java.home") "/bin/java")
         cmd (concat prefix [java "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "-Xmx256m" "-cp" (System/getProperty "java.class.path")
                             "clojure.main" "-m" "herald.load.main" "agent" "--port" "0" "--host" host "--hlog-dir" (str dir)])
         p (.start (doto (ProcessBuilder. ^java.util.List (vec cmd))
                     (.redirectError (io/file dir "agent.log"))))
         line (.readLine (BufferedReader. (InputStreamReader. (.getInputStream p))))
         [_ port] (some->> line (re-find #"listening on \S+:(\d+) protocol=1"))]
     (when-not port
       (.destroyForcibly p)
       (throw (ex-info (str "agent did not start: " line " " (slurp (io/file dir "agent.log"))) {:type ::agent})))
     {:process p :port (parse-long port) :name (str host ":" port) :hlog-dir dir})))

(defn- await!
  "True once (ok?) is, checked every 20 ms for at most `timeout-ms` (generous: a loaded 2-core CI machine); false
  after. Tests wait for the event they need, not a fixed time."
  [timeout-ms ok?]
  (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop [] (cond (ok?) true (> (System/currentTimeMillis) deadline) false :else (do (Thread/sleep 20) (recur))))))

(defn stop-agent [{:keys [^Process process]}]
  (.destroyForcibly process)
  (.waitFor process 10 TimeUnit/SECONDS))

(defn- sh! [& args]
  (let [{:keys [exit err]} (apply shell/sh args)]
    (when-not (zero? exit) (throw (ex-info (str (str/join " " args) ": " (str/trim err)) {:type ::sh})))))

(defn- netns-up
  "A new network namespace joined to this one by a veth pair on a random 10.213.x.y/30:
  {:ns :veth :host-addr :agent-addr}, or {:skip reason} when namespaces cannot be made here."
  []
  (let [id (str "hla" (mod (.pid (java.lang.ProcessHandle/current)) 100000))
        x (rand-int 250) y (* 4 (rand-int 60))
        n {:ns id :veth (str id "a") :host-addr (str "10.213." x "." (+ y 1)) :agent-addr (str "10.213." x "." (+ y 2))}]
    (try
      (sh! "ip" "netns" "add" id)
      (sh! "ip" "link" "add" (:veth n) "type" "veth" "peer" "name" (str id "b"))
      (sh! "ip" "link" "set" (str id "b") "netns" id)
      (sh! "ip" "addr" "add" (str (:host-addr n) "/30") "dev" (:veth n))
      (sh! "ip" "link" "set" (:veth n) "up")
      (sh! "ip" "netns" "exec" id "ip" "addr" "add" (str (:agent-addr n) "/30") "dev" (str id "b"))
      (sh! "ip" "netns" "exec" id "ip" "link" "set" (str id "b") "up")
      (sh! "ip" "netns" "exec" id "ip" "link" "set" "lo" "up")
      n
      (catch Exception e
        (shell/sh "ip" "link" "del" (:veth n))
        (shell/sh "ip" "netns" "del" id)
        {:skip (str "network namespaces cannot be made here (needs root and iproute2): " (ex-message e))}))))

(defn- netns-down [{:keys [ns veth skip]}]
  (when-not skip
    (shell/sh "ip" "link" "del" veth)
    (shell/sh "ip" "netns" "del" ns)))

(def ^:private env
  "The fixture's agents [a b c] (c in another network namespace when one could be made) and :server-host,
  the address the test servers listen on (the host end of the veth pair, reachable from every agent)."
  (atom {}))

(use-fixtures :once
  (fn [f]
    (let [n (netns-up)
          specs [[[] "127.0.0.1"] [[] "127.0.0.1"] (if (:skip n) [[] "127.0.0.1"] [["ip" "netns" "exec" (:ns n)] (:agent-addr n)])]
          as (vec (pmap (fn [[prefix host]] (try (start-agent prefix host) (catch Exception e e))) specs))]
      (try
        (when-let [e (first (filter #(instance? Throwable %) as))] (throw e))
        (reset! env {:agents as :netns n :server-host (if (:skip n) "127.0.0.1" (:host-addr n))})
        (f)
        (finally (run! #(when (map? %) (stop-agent %)) as) (netns-down n))))))

(defn- handler
  "Ring handler: /slow sleeps 20 ms; counts every request in `seen`."
  [seen]
  (fn [req]
    (swap! seen inc)
    (when (= "/slow" (:uri req)) (Thread/sleep 20))
    {:status 200 :headers {"content-type" "text/plain"} :body "hello"}))

(defn- as-agents [xs] (mapv #(let [[_ h p] (re-matches #"(.+):(\d+)" (:name %))] {:host h :port (parse-long p) :name (:name %)}) xs))

(defn- hlog-union
  "Every interval histogram of the .hlog files in `dirs` added into one (the agents' own records)."
  ^Histogram [dirs]
  (let [out (hist/histogram)]
    (doseq [d dirs ^java.io.File f (.listFiles (io/file d)) :when (str/ends-with? (.getName f) ".hlog")]
      (let [r (HistogramLogReader. f)]
        (loop [] (when-let [h (.nextIntervalHistogram r)] (.add out ^Histogram h) (recur)))))
    out))

(defn- clear-hlogs! [xs]
  (doseq [a xs ^java.io.File f (.listFiles (io/file (:hlog-dir a))) :when (str/ends-with? (.getName f) ".hlog")] (.delete f)))

(defn- url [s path] (str "http://" (:server-host @env) ":" (:port s) path))

(defn- split-over-three [[a b c :as as]]
  (let [seen (atom 0)]
    (with-http-server [s (handler seen) {:host (:server-host @env)}]
      ;; a short unmeasured run first: the server's and the agents' first requests load classes
      (coordinator/execute :rate {:url (url s "/") :rate 60 :duration 0.5 :connections 3 :progress :quiet :agent-lead-ms 300}
                           (as-agents as))
      (reset! seen 0)
      (clear-hlogs! as)
      (let [hlog (io/file (tmp-dir) "agents.hlog")
            r (coordinator/execute :rate {:url (url s "/") :rate 300 :duration 2 :connections 12
                                          :progress :quiet :agent-lead-ms 500 :hlog (str hlog)}
                                   (as-agents as))
            union (hlog-union (map :hlog-dir as))]
        (testing "each agent ran a third of the rate on a third of the connections, and every one finished"
          (is (= [:ok :ok :ok] (mapv :status (:agents r))) (pr-str (:agents r)))
          (is (= [100.0 100.0 100.0] (mapv #(get-in % [:share :target-rate]) (:agents r))))
          (is (= [4 4 4] (mapv #(get-in % [:share :connections]) (:agents r))))
          (ts/when-calm (is (every? #(< (Math/abs (double (:start-skew-ms %))) 100.0) (:agents r)) (pr-str (map :start-skew-ms (:agents r))))))
        (testing "merged figures are those of the union of the agents' own records"
          (is (= (:requests r) (reduce + (map :requests (:agents r))) (.getTotalCount union) @seen))
          (is (= (hist/summary union) (:latency r)))
          (is (= (hist/summary union) (hist/summary (hist/decode (get-in r [:histograms :latency])))))
          (is (= (:requests r) (reduce + (map :count (:intervals r)))) "the streamed intervals hold every request"))
        (testing "the coordinator's .hlog tags every interval with its agent"
          (let [tags (with-open [rd (io/reader hlog)] (set (keep #(second (re-find #"^Tag=([^,]+)," %)) (line-seq rd))))]
            (is (= (set (map :name as)) tags))))
        (if-let [why (get-in @env [:netns :skip])]
          (clojure.test/do-report {:type :skip :message (str "agents across network namespaces: " why)})
          (testing "the third agent ran in its own network namespace, over the veth pair"
            (is (str/starts-with? (:name c) "10.213."))
            (is (pos? (:requests (nth (:agents r) 2))))))
        (ts/when-calm
         (testing "the total rate within 1% of the target, no agent behind"
           (is (< 297.0 (get-in r [:rate :achieved]) 303.0) (pr-str (:rate r) (:warnings r)))
           (is (not-any? :behind? (:agents r)) (pr-str (:warnings r)))))))))

(defn- short-of-connections [a b]
  (let [seen (atom 0)]
    (with-http-server [s (handler seen) {:host (:server-host @env)}]
      ;; 120/s of 20 ms requests on 3 connections: the first agent's 2 carry 60/s, the second's 1 at most 50/s
      (let [r (coordinator/execute :rate {:url (url s "/slow") :rate 120 :duration 2 :connections 3
                                          :progress :quiet :agent-lead-ms 500}
                                   (as-agents [a b]))
            [fa fb] (:agents r)]
        (is (= [2 1] [(get-in fa [:share :connections]) (get-in fb [:share :connections])]))
        (is (:behind? fb) (pr-str fb))
        (is (:stalled? fb) (pr-str fb))
        (is (some #(str/starts-with? % (str "AGENT " (:name b) " FELL BEHIND ITS SHARE: achieved ")) (:warnings r)) (pr-str (:warnings r)))
        (is (some #(str/starts-with? % (str "AGENT " (:name b) " STALLED")) (:warnings r)))
        (ts/when-calm (is (not (:behind? fa)) (pr-str fa)))))))

(defn- killed-mid-run [a victim]
  (let [seen (atom 0)]
    (with-http-server [s (handler seen) {:host (:server-host @env)}]
      (let [out (tmp-dir)
            log (io/file (:hlog-dir victim) "agent.log")
            connects #(count (re-seq #"coordinator \S+ connected" (slurp log)))
            before (connects)
            run (future (let [o (java.io.StringWriter.) e (java.io.StringWriter.)]
                          (binding [*out* o *err* e]
                            [(main/run-cli ["rate" (url s "/") "--rate" "100" "-d" "3s" "-c" "4" "-q"
                                            "--agents" (str (:name a) "," (:name victim)) "-o" (str out)])
                             (str o) (str e)])))]
        ;; kill it once its coordinator is connected and the run is under way (requests arrive), early in the 3 s
        ;; run: a fixed 2 s after the connect left a loaded machine too little margin before the run's end
        (is (await! 120000 #(> (connects) before)) "the victim's coordinator connected")
        (is (await! 120000 #(<= 30 (long @seen))) "the run is under way")
        (stop-agent victim)
        (let [[code stdout stderr] (deref run 60000 [:timeout "" ""])]
          (is (= 2 code) (str stdout stderr))
          (is (re-find (re-pattern (str "AGENT " (:name victim) " DIED: .*its share \\(50.0/s over 2 connections\\) is missing")) stdout) stdout)
          (is (re-find (re-pattern (str "herald-load agent=" (:name a) " status=ok")) stdout))
          (is (re-find (re-pattern (str "herald-load agent=" (:name victim) " status=died")) stdout))
          (is (re-find #"herald-load mode=rate requests=\d+" stdout))
          (is (str/includes? (slurp (io/file out "report.html")) "<h2>Agents</h2>"))
          (is (str/includes? (slurp (io/file out "summary.json")) "\"agents\"")))))))

(deftest ^:integration three-agents-split-merge-fall-behind-and-die
  ;; one deftest, so the order holds: the third agent is killed last
  (let [[a b c] (:agents @env)]
    (testing "split over three agents" (split-over-three [a b c]))
    (testing "an agent short of connections is behind its share" (short-of-connections a b))
    (testing "an agent killed mid-run is reported and the run ends with the others" (killed-mid-run a c))))

(defn- hello [port protocol]
  (let [s (Socket. "127.0.0.1" (int port))
        out (DataOutputStream. (.getOutputStream s))]
    (wire/write-frame! out {:type :hello :protocol protocol :coordinator "test"})
    [s (wire/read-frame (DataInputStream. (.getInputStream s)))]))

(deftest ^:integration an-agent-refuses-a-second-coordinator-and-other-protocols
  (let [{:keys [port hlog-dir]} (first (:agents @env))
        [^Socket s1 m1] (hello port wire/protocol-version)
        ;; the agent's line once it let the first coordinator go (busy is free again then)
        gone (str "coordinator /127.0.0.1:" (.getLocalPort s1) " gone")]
    (try
      (is (= :welcome (:type m1)))
      (let [[^Socket s2 m2] (hello port wire/protocol-version)]
        (.close s2)
        (is (= :refused (:type m2)))
        (is (str/starts-with? (:reason m2) "busy")))
      (finally (.close s1)))
    ;; not a fixed 300 ms: a loaded machine's agent may notice the close later
    (is (await! 60000 #(str/includes? (slurp (io/file hlog-dir "agent.log")) gone)) "the agent saw the first coordinator go")
    (testing "a peer sending garbage is dropped; the agent still serves"
      (with-open [g (doto (Socket. "127.0.0.1" (int port)) (.setSoTimeout 20000))]
        (.write (.getOutputStream g) (.getBytes "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
        (.flush (.getOutputStream g))
        (is (= -1 (.read (.getInputStream g))) "closed without an answer")))
    (let [[^Socket s3 m3] (hello port 99)]
      (.close s3)
      (is (= :refused (:type m3)))
      (is (str/includes? (:reason m3) "protocol 99 not supported")))
    (let [[^Socket s4 m4] (hello port wire/protocol-version)]
      (.close s4)
      (is (= :welcome (:type m4)) "free again once the first coordinator left"))))

(deftest agents-lists-parse
  (is (= [{:host "gen1" :port 7400 :name "gen1:7400"} {:host "::1" :port 7401 :name "[::1]:7401"}
          {:host "10.0.0.7" :port 1 :name "10.0.0.7:1"}]
         (wire/parse-agents " gen1:7400, [::1]:7401,10.0.0.7:1"))))

(deftest bad-agents-values-are-usage-errors
  (is (str/includes? (with-out-str (is (zero? (main/run-cli ["agent" "--help"])))) "--port PORT"))
  (binding [*err* (java.io.StringWriter.)]
    (is (= 1 (main/run-cli ["agent"])) "agent wants --port")
    (is (= 1 (main/run-cli ["rate" "http://127.0.0.1:9/" "--rate" "10" "--script" "x.clj" "--agents" "h:1"])) "no scripts with --agents"))
  (doseq [v ["localhost" "h:0" "h:70000" "a:1,a:1" "," "h:p"]]
    (let [e (java.io.StringWriter.)
          code (binding [*err* e *out* (java.io.StringWriter.)]
                 (main/run-cli ["rate" "http://127.0.0.1:9/" "--rate" "10" "--agents" v]))]
      (is (= 1 code) v)
      (is (str/includes? (str e) "bad --agents value") (str e)))))

(defn- tiny-feed
  "A fake feed service: POST /participant answers a new id, anything else 200 with an empty body."
  []
  (let [ids (atom 0)]
    (fn [^com.sun.net.httpserver.HttpExchange ex]
      (if (and (= "POST" (.getRequestMethod ex)) (= "/participant" (.getPath (.getRequestURI ex))))
        (let [id (swap! ids inc)] (ts/respond! ex 200 (str "{\"id\":" id ",\"name\":\"n\",\"link\":\"/participant/" id "\"}")))
        (ts/respond! ex 200 (if (= "GET" (.getRequestMethod ex)) "[]" "{}"))))))

(deftest ^:integration the-feed-workload-splits-its-users
  (ts/with-server [s (tiny-feed) 4]
    (let [out (tmp-dir)
          code (binding [*out* (java.io.StringWriter.) *err* (java.io.StringWriter.)]
                 (main/run-cli ["feed" "--port" (str (:port s)) "-u" "4" "-d" "1.5s" "-q" "-o" (str out)
                                "--agents" (str/join "," (map :name (take 2 (:agents @env))))]))
          r (output/read-result (io/file out "result.edn"))]
      (is (= 0 code))
      (is (str/includes? (slurp (io/file out "report.html")) "<h2>Agents</h2>"))
      (is (= [2 2] (mapv #(get-in % [:share :users]) (:agents r))))
      (is (= [:ok :ok] (mapv :status (:agents r))))
      (is (pos? (:requests r)))
      (is (= (:requests r) (reduce + (map :requests (:agents r)))))
      (is (= (:requests r) (reduce + (map #(get-in % [:latency :count]) (vals (:operations r)))))
          "the per-operation counts of both agents are summed")
      (is (contains? (:operations r) "participant post"))
      (is (zero? (reduce + (vals (:errors r)))) (pr-str (:errors r))))))
