(ns herald.feed.cluster-test
  "^:integration The feed as a cluster, as a user starts it: bin/herald-cluster runs Kafka, PostgreSQL, Redis, three
  feed instances and HAProxy, on this test JVM's Cassandra and OpenSearch nodes (external servers to the script; see
  herald.feed.cluster.harness). The contract through the balancer and through each instance; then, under a write load
  spread over the instances, a SIGKILL of an instance, a Kafka broker restart and an OpenSearch outage (a SIGKILL of
  the node): every acknowledged post is once in its author's outbound feed, once in each friend's inbound feed and
  once in search, read through the instances that run. Skipped with the reason when a server cannot start."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures] :as t]
            [herald.feed.cluster.harness :as h]
            [herald.feed.cluster.workload :as w]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:private cluster (atom nil))

(defn- failures [] (let [c @t/*report-counters*] (+ (long (:fail c 0)) (long (:error c 0)))))

(defn- print-logs
  "The last lines of each instance's log, for a failure in CI."
  [{:keys [dir]}]
  (doseq [^java.io.File f (sort (filter #(= "instance.log" (.getName ^java.io.File %)) (file-seq (io/file dir))))]
    (println (str "--- last lines of " f " ---"))
    (println (str/join "\n" (take-last 30 (str/split-lines (slurp f)))))))

(defn- with-cluster [f]
  (let [c (h/up! 3)
        before (failures)]
    (reset! cluster c)
    (try (f)
         (finally
           (let [failed? (or (:error c) (> (long (failures)) (long before)))]
             (when failed? (print-logs c))
             (h/down! c failed?))
           (reset! cluster nil)))))

(use-fixtures :once with-cluster)

(defmacro ^:private with-up
  "Runs body with `sym` bound to the cluster, or reports why there is none (skip: a server; failure: an instance)."
  [[sym] & body]
  `(let [c# @cluster]
     (cond (:skip c#) (t/do-report {:type :skip :message (str "no cluster: " (:skip c#))})
           (:error c#) (is false (str "a feed instance did not start: " (:error c#)))
           :else (let [~sym c#] ~@body))))

(defn- instance [c i] (get-in c [:instances i]))

(defn- check-contract!
  "Writes through `writer` and reads through `reader`: participants, friends, a post in outbound (at once) and
  inbound (eventually), search (eventually)."
  [writer reader tag]
  (let [req (fn [base path & opts] (apply u/request base path opts))
        mk #(get-in (req writer "/participant" :method :post :json {:name (str tag "-" %)}) [:json "id"])
        [a b c] [(mk "a") (mk "b") (mk "c")]
        token (str "contract" tag)]
    (is (every? some? [a b c]) "participants created")
    (is (= {"id" a "name" (str tag "-a") "link" (w/link a)} (:json (req reader (w/link a)))) "a participant read elsewhere")
    (is (= 404 (:status (req reader (w/link (+ 1000000 (long c)))))) "an unknown participant is a 404")
    (doseq [x [b c]]
      (is (= 200 (:status (req writer (str (w/link a) "/friends") :method :post :json {:from (w/link a) :to (w/link x)})))))
    (is (= #{(w/link b) (w/link c)} (set (map #(get % "to") (:json (req reader (str (w/link a) "/friends")))))))
    (is (= [(w/link a)] (map #(get % "to") (:json (req reader (str (w/link b) "/friends"))))) "friendship is symmetric")
    (let [post {:from (w/link a) :occurred "2026-11-25" :subject token :story (str "the story of " token)}]
      (let [echo (-> (req writer (str (w/link a) "/outbound") :method :post :json post) :json (update-keys keyword))]
        (is (= post (select-keys echo (keys post))) "the post is echoed")
        (is (= (str (w/link a) "/outbound/" (:id echo)) (:link echo)) "with its id and link"))
      (is (= [token] (map #(get % "subject") (:json (req reader (str (w/link a) "/outbound")))))
          "the author's outbound has it at once, read on another endpoint")
      (doseq [x [b c]]
        (is (= [[(w/link a) (w/link x) token]]
               (map (juxt #(get % "from") #(get % "to") #(get % "subject"))
                    (:json (u/eventually 30000 #(seq (:json %)) #(req reader (str (w/link x) "/inbound"))))))
            "each friend's inbound gets it"))
      (is (= [(w/link a)] (:json (u/eventually 30000 #(seq (:json %)) #(req reader (str "/outbound?keywords=" token)))))
          "search finds it"))))

(deftest ^:integration the-contract-through-the-balancer-and-each-instance
  (with-up [c]
    (let [eps (into [(:balancer c)] (vals (:instances c)))]
      ;; side by side (each waits for fan-out and indexing; their participants and tokens are their own)
      (run! deref (doall (for [[i writer] (map-indexed vector eps)
                               :let [reader (nth eps (mod (inc i) (count eps)))]]
                           (future (testing (str "written through " writer ", read through " reader)
                                     (check-contract! writer reader (str "c" i))))))))))

(defmacro ^:private timed
  "Runs body and prints how long it took (where a run's time goes, in CI's log); returns its value."
  [what & body]
  `(let [t0# (System/currentTimeMillis)
         v# (do ~@body)]
     (println (str "cluster test: " ~what " took " (- (System/currentTimeMillis) t0#) " ms"))
     v#))

(defn- check-feeds!
  "Every acknowledged post once in its author's outbound (at once) and in each friend's inbound (eventually)."
  [readers graph acked]
  (testing "every acknowledged post is in its author's outbound, once (read-your-writes, at once)"
    (let [p (timed "outbound check" (w/outbound-problems readers acked))] (is (empty? p) (w/summary p))))
  (testing "every acknowledged post reaches each friend's inbound, once"
    (let [p (timed "inbound check" (w/eventually-none 60000 #(w/inbound-problems readers graph acked)))]
      (is (empty? p) (w/summary p)))))

(defn- check-search!
  "Every acknowledged post found once by search, within timeout-ms."
  [readers acked timeout-ms]
  (testing "every acknowledged post is searchable, once"
    (let [p (timed "search check" (w/search-problems readers acked timeout-ms))] (is (empty? p) (w/summary p)))))

(defn- check-acked!
  "The three views of every acknowledged post, read through `readers`."
  [readers graph acked]
  (check-feeds! readers graph acked)
  (check-search! readers acked 60000))

(defmacro ^:private with-load
  "Runs body with `sym` bound to a write load (workload/start-load! args); the load stops when body ends, however."
  [[sym & args] & body]
  `(let [~sym (w/start-load! ~@args)]
     (try ~@body (finally ((:stop! ~sym))))))

(defn- acked-count ^long [load] (.get ^java.util.concurrent.atomic.AtomicLong (:acked load)))

(deftest ^:integration sigkill-of-an-instance-under-write-load
  (with-up [c]
    (let [graph (w/graph! (:balancer c) 12)
          eps (vec (vals (:instances c)))]
      (with-load [load "kill" graph (constantly eps) 6 100 1000]
        (w/await-acked load 0 120 60000)
        (h/kill! c 2)                                             ; SIGKILL mid-load
        (w/await-acked load (acked-count load) 60 90000)
        (let [acked ((:stop! load))
              survivors [(instance c 1) (instance c 3)]]
          (println "cluster test: SIGKILL of instance 2:" (count acked) "posts acknowledged,"
                   (count (filter #(= (instance c 2) (:via %)) acked)) "by instance 2")
          (is (< 100 (count acked)) "the load got posts acknowledged on every side of the kill")
          (check-acked! survivors graph acked))))))

(deftest ^:integration kafka-broker-restart-under-write-load
  (with-up [c]
    (let [graph (w/graph! (:balancer c) 12)
          eps [(instance c 1) (instance c 3) (:balancer c)]]
      (with-load [load "kafka" graph (constantly eps) 6 100 1000]
        (w/await-acked load 0 60 60000)
        (h/kill! c "kafka")
        (Thread/sleep 2000)
        (h/start! c "kafka")
        (let [n (acked-count load)
              after (- (long (w/await-acked load n 40 120000)) n)
              acked ((:stop! load))]
          (println "cluster test: Kafka broker restart:" (count acked) "posts acknowledged," after "after the restart")
          (is (<= 40 after) "posts are acknowledged again after the broker restart")
          (check-acked! [(instance c 1) (instance c 3)] graph acked))))))

(deftest ^:integration opensearch-outage-under-write-load
  (with-up [c]
    (let [graph (w/graph! (:balancer c) 12)
          eps [(instance c 1) (instance c 3) (:balancer c)]
          readers [(instance c 1) (instance c 3)]
          restart (atom nil)]
      (with-load [load "search" graph (constantly eps) 6 100 1000]
        (w/await-acked load 0 40 60000)
        (h/kill! c "opensearch")
        (let [down-at (System/currentTimeMillis)
              _ (w/await-acked load (acked-count load) 60 90000)
              acked ((:stop! load))
              meanwhile (filter #(< down-at (long (:at %))) acked)]
          (println "cluster test: OpenSearch outage:" (count acked) "posts acknowledged," (count meanwhile) "while it was down")
          (is (seq meanwhile) "posts are acknowledged while OpenSearch is down")
          (testing "while OpenSearch is down"
            (check-feeds! readers graph acked))
          (h/start! c "opensearch")
          ;; instance 2 (killed in the SIGKILL test) starts while search catches up: its start needs OpenSearch up
          ;; (the index is ensured at start), not the catch-up, and the two overlapping saves a JVM start's time
          (reset! restart (future (h/start! c 2)))
          (testing "after OpenSearch is back"
            (check-search! readers acked 120000))))
      (testing "the killed instance starts again and serves what the others wrote"
        (timed "instance 2's start (after the search check)" (if-let [f @restart] @f (h/start! c 2)))
        (check-contract! (instance c 1) (instance c 2) "restarted")))))

(defn- free-port ^long [] (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s)))

(defn- dropper!
  "A server on a free port that answers GET /health and drops every other request unanswered, as an instance
  SIGKILLed mid-request does; returns {:port :close!}."
  []
  (let [ss (java.net.ServerSocket. 0 50 (java.net.InetAddress/getLoopbackAddress))
        serve (fn [^java.net.Socket c]
                (with-open [c c]
                  (let [in (.getInputStream c)
                        head (loop [acc ""]
                               (if (str/ends-with? acc "\r\n\r\n")
                                 acc
                                 (let [b (.read in)] (if (neg? b) acc (recur (str acc (char b)))))))]
                    (when (str/starts-with? head "GET /health ")
                      (.write (.getOutputStream c) (.getBytes (str "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                                                   "Content-Length: 15\r\n\r\n{\"status\":\"ok\"}")))))))]
    (future (try (while true (let [c (.accept ss)] (future (try (serve c) (catch Exception _)))))
                 (catch java.io.IOException _)))
    {:port (.getLocalPort ss) :close! #(.close ss)}))

(defn- with-balancer-copy
  "Runs (f url) against a second HAProxy on the balancer config `up` wrote under `dir`, its first server (or every
  one, with `all?`) moved to `addr`."
  [dir addr all? f]
  (let [port (free-port)
        cfg (io/file dir "balancer" "copy.cfg")
        ;; both backends list each instance: move instance1 (or all) in both
        pat (if all? #"(server instance\d+) 127\.0\.0\.1:\d+" #"(server instance1) 127\.0\.0\.1:\d+")]
    (spit cfg (-> (slurp (io/file dir "balancer" "haproxy.cfg"))
                  (str/replace #"bind 127\.0\.0\.1:\d+" (str "bind 127.0.0.1:" port))
                  (str/replace pat (str "$1 " addr))))
    (let [^java.util.List cmd ["haproxy" "-db" "-f" (str cfg)]
          p (.start (doto (ProcessBuilder. cmd)
                      (.redirectErrorStream true)
                      (.redirectOutput (io/file dir "balancer" "copy.log"))))]
      (try (u/eventually 10000 true? #(try (with-open [_ (java.net.Socket. "127.0.0.1" (int port))] true)
                                           (catch java.io.IOException _ false)))
           (f (str "http://127.0.0.1:" port))
           (finally (.destroy p) (.waitFor p 10 java.util.concurrent.TimeUnit/SECONDS))))))

(defn- try-request
  "u/request, or nil when the connection fails."
  [base path & opts]
  (try (apply u/request base path opts) (catch java.io.IOException _ nil)))

(deftest ^:integration the-balancers-own-answers-are-json-errors
  ;; found by the external fuzz campaign: HAProxy answered its own errors with HTML pages (a 503 with no instance
  ;; up), and a GET an instance dropped mid-request (a SIGKILL) was a 502 though a read can be sent again
  (with-up [c]
    (testing "no instance up: a JSON 503 with Retry-After"
      (with-balancer-copy (:dir c) (str "127.0.0.1:" (free-port)) true
        (fn [base]
          (let [r (u/eventually 10000 #(= 503 (:status %)) #(try-request base "/participant/1" :method :post :json {}))]
            (is (= 503 (:status r)) (pr-str r))
            (is (str/starts-with? (str (get-in r [:headers "content-type"])) "application/json") (pr-str r))
            (is (= "no feed instance available: retry the request" (get-in r [:json "error"])))
            (is (= "1" (get-in r [:headers "retry-after"])))))))
    (testing "an instance that drops requests: reads go again to another one, writes are not sent twice"
      (let [{:keys [port close!]} (dropper!)]
        (try
          (with-balancer-copy (:dir c) (str "127.0.0.1:" port) false
            (fn [base]
              (let [a (get-in (u/eventually 20000 #(= 200 (:status %))
                                            #(try-request (:balancer c) "/participant" :method :post :json {:name "drop"}))
                              [:json "id"])
                    reads (doall (for [_ (range 12)] (:status (try-request base (w/link a)))))
                    writes (doall (for [_ (range 6)] (try-request base "/participant" :method :post :json {:name "w"})))]
                (is (= (repeat 12 200) reads) "every GET answered, the dropped ones by another instance")
                ;; a write the dropper took is not sent again: a JSON 502, or (on a kept-alive client connection)
                ;; the connection closed, as HAProxy does when a server answers nothing
                (is (some #(not= 200 (:status %)) writes) (pr-str (map :status writes)))
                (doseq [r writes :when r]
                  (is (#{200 502} (:status r)) (pr-str r))
                  (when (= 502 (:status r))
                    (is (re-find #"a write may have been recorded" (str (get-in r [:json "error"]))) (pr-str r)))))))
          (finally (close!)))))))
