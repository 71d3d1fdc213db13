(ns herald.feed.store.outage-test
  "Outages of real servers are a few log lines (herald.feed.outage), not one per call: a Redis stopped for 5 s under
  a running feed (:scale profile, the cache on Redis, the other roles in memory) and HTTP load; PostgreSQL and
  OpenSearch cut off behind a TCP proxy while the backend is called. Everything the process logs meanwhile
  (System.err, where slf4j-simple and the feed write, and *err*) is counted: one down line, one back line, no stack
  trace."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.servers.cassandra :as cass]
            [herald.feed.servers.opensearch :as node]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.proxy :as proxy]
            [herald.feed.servers.redis :as rd]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.cassandra :as cassandra]
            [herald.feed.store.opensearch :as os]
            [herald.feed.store.postgres :as postgres]
            [herald.feed.store.scale.roles :as roles]
            [herald.feed.test-util :as u])
  (:import (java.io ByteArrayOutputStream OutputStreamWriter PrintStream)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- load!
  "Runs `threads` closed-loop users against base until (stop?) is true; each reads participants, befriends and
  posts, counting each answer's status into the atom `statuses` ({status count}). Returns a future of the final
  counts."
  [base threads stop? statuses]
  (let [user (fn [k]
               (let [req (fn [& args]
                           (let [s (try (:status (apply u/request base args)) (catch Exception _ :io-error))]
                             (swap! statuses update s (fnil inc 0))))]
                 (loop [i 0]
                   (when-not (stop?)
                     (let [a (inc (mod (+ i k) 20)) b (inc (mod (+ i k 7) 20))]
                       (req (str "/participant/" a))
                       (when (not= a b)
                         (req (str "/participant/" a "/friends") :method :post :json {:to (str "/participant/" b)}))
                       (req (str "/participant/" a "/outbound") :method :post :json {:subject "s" :story "outage"})
                       (recur (inc i)))))))]
    (future (run! deref (doall (for [k (range threads)] (future (user k))))) @statuses)))

(defn- await!
  "Waits until (ok?) is true, checking every 20 ms, at most `timeout-ms` (generous: a loaded 2-core CI machine);
  true when it became true. The load's phases synchronise on what happened, not on fixed sleeps."
  [timeout-ms ok?]
  (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop [] (cond (ok?) true (> (System/currentTimeMillis) deadline) false :else (do (Thread/sleep 20) (recur))))))

(def ^:private redis-back-line #"redis redis://127\.0\.0\.1:\d+/0 is back after \d+\.\d s down: \d+ failed calls")

(defmacro ^:private capturing-output
  "Runs body with System.err and the root *err* captured into the ByteArrayOutputStream `buf`; restores both."
  [buf & body]
  `(let [old-err# System/err
         old-root# *err*
         ps# (PrintStream. ~buf true "UTF-8")]
     (System/setErr ps#)
     (alter-var-root #'*err* (constantly (OutputStreamWriter. ps# StandardCharsets/UTF_8)))
     (try ~@body
          (finally (.flush ps#)
                   (System/setErr old-err#)
                   (alter-var-root #'*err* (constantly old-root#))))))

(deftest ^:integration a-redis-outage-under-load-is-a-few-log-lines
  (let [{:keys [uri stop start error]} (rd/start-own!)]
    (if error
      (clojure.test/do-report {:type :skip :message (str "Redis could not start: " error)})
      (let [sys (feed/start! {:profile :scale :env {}
                              :config {:http {:port 0 :host "127.0.0.1"}
                                       :auth {:enabled? false}
                                       :events {:type :local}
                                       :store (merge roles/all-in-memory
                                                     {:type :scale :cache {:type :redis :uri uri
                                                              ;; a refused connect fails at once anyway; a call to a
                                                              ;; live Redis in a starved JVM must not time out (a
                                                              ;; second down line)
                                                              :timeout-ms 5000}})}})
            base (feed/url sys)
            buf (ByteArrayOutputStream.)
            done (atom false)
            live (atom {})
            n (fn [status] (long (get @live status 0)))
            text #(String. (.toByteArray buf) StandardCharsets/UTF_8)]
        (try
          (dotimes [i 20] (u/request base "/participant" :method :post :json {:name (str "p" i)}))
          ;; each phase waits for what it needs (not a fixed sleep: a loaded machine may serve little in 1.5 s):
          ;; some load before the stop, a 503 and >= 5 s of outage, the back line after the start, then 1 s more
          (let [statuses (capturing-output buf
                           (let [f (load! base 4 #(deref done) live)
                                 _ (is (await! 60000 #(< 200 (n 200))) "the load runs before the outage")
                                 _ (stop)
                                 stopped (System/currentTimeMillis)
                                 _ (is (await! 60000 #(pos? (n 503))) "a 503 while Redis is down")
                                 _ (Thread/sleep (max 0 (- 5000 (- (System/currentTimeMillis) stopped))))
                                 _ (start)
                                 ok (n 200)]
                             (is (await! 60000 #(and (re-find redis-back-line (text)) (< (+ ok 50) (n 200)))) "back, and serving")
                             (Thread/sleep 1000)
                             (reset! done true)
                             @f))
                lines (remove str/blank? (str/split-lines (text)))]
            (println "redis outage under load: statuses" statuses "->" (count lines) "log lines:")
            (run! #(println "  " %) (take 20 lines))
            (is (pos? (long (get statuses 503 0))) "befriending needs the cache's invalidation: 503 while Redis is down")
            (is (> (long (get statuses 200 0)) 200) "the load ran")
            (is (<= 2 (count lines) 8) "a handful of lines, not one per request")
            (is (= 1 (count (filter #(re-find #"redis redis://127\.0\.0\.1:\d+/0 is down: " %) lines))) "one down line")
            (is (= 1 (count (filter #(re-find redis-back-line %) lines)))
                "one back line")
            (is (not-any? #(re-find #"^\s+at |^\S+(Exception|Error)(: |$)" %) lines) "no stack trace"))
          (finally (reset! done true) (feed/stop! sys) (try (stop) (catch Exception _ nil))))))))

(defn- log-lines [^ByteArrayOutputStream buf]
  (remove str/blank? (str/split-lines (String. (.toByteArray buf) StandardCharsets/UTF_8))))

(defn- stack-trace? [line] (re-find #"^\s+at |^\S+(Exception|Error)(: |$)" line))

(defn- fail-for!
  "Calls (f) for `ms` milliseconds; returns how many calls threw an ex-info marked by an outage reporter, and
  counts any other result under :other (a success under :succeeded too, the first other error under :first-other)."
  [ms f]
  (let [deadline (+ (System/currentTimeMillis) (long ms))]
    (loop [acc {:reported 0 :other 0 :succeeded 0}]
      (if (> (System/currentTimeMillis) deadline)
        acc
        (let [r (try (f) :ok (catch clojure.lang.ExceptionInfo e
                               (if (contains? (ex-data e) :herald.feed.outage/reported-by) :reported e)))]
          (recur (case r
                   :reported (update acc :reported inc)
                   :ok (-> acc (update :other inc) (update :succeeded inc))
                   (cond-> (update acc :other inc)
                     (not (:first-other acc)) (assoc :first-other [(ex-message r) (ex-data r)])))))))))

(defn- until-ok
  "(f) retried every 100 ms until it returns without throwing, at most 60 s; its value."
  [f]
  (let [deadline (+ (System/currentTimeMillis) 60000)]
    (loop []
      (let [r (try [(f)] (catch Exception e (if (> (System/currentTimeMillis) deadline) (throw e) nil)))]
        (if r (first r) (do (Thread/sleep 100) (recur)))))))

(defn- check-lines [lines backend]
  (println backend "outage:" (count lines) "log lines:")
  (run! #(println "  " %) (take 10 lines))
  (is (<= 2 (count lines) 4) "a handful of lines, not one per call")
  (is (= 1 (count (filter #(re-find (re-pattern (str backend " \\S+ is down: ")) %) lines))) "one down line")
  (is (= 1 (count (filter #(re-find (re-pattern (str backend " \\S+ is back after \\d+\\.\\d s down: \\d+ failed calls")) %)
                          lines)))
      "one back line")
  (is (not-any? stack-trace? lines) "no stack trace"))

(deftest ^:integration a-postgres-outage-is-a-few-log-lines
  (pg/when-up
   (let [{:keys [cut! restore! stop! port]} (proxy/start! (:port (pg/info)))
         config (-> (pg/fresh-config)
                    (update :jdbc-url #(str/replace-first % #":\d+/" (str ":" port "/")))
                    ;; one pooled connection: HikariCP logs a line per idle connection it finds broken at the cut,
                    ;; as many as the pool had filled by then (0 to 10, by timing: 2 of them took a loaded run
                    ;; to 4 lines); with one, at most one such line
                    (assoc :connection-timeout-ms 500 :pool-size 1))
         ;; opened until it answers within the short timeout the outage needs (a first connection on a loaded
         ;; machine took longer than 500 ms): the outage, not the open, is under test
         st (until-ok #(postgres/open config))
         buf (ByteArrayOutputStream.)]
     (try
       (let [{:keys [id]} (graph/create-participant! st "Ann")
             calls (capturing-output buf
                     (cut!)
                     (let [r (fail-for! 3000 #(graph/participant st id))]
                       (is (false? (s/ready? st)) "not ready while the server is cut off")
                       (restore!)
                       (is (= "Ann" (:name (until-ok #(graph/participant st id)))))
                       r))]
         (is (> (long (:reported calls)) 2) (pr-str calls))
         (is (zero? (long (:other calls))) (str "every call fails, as an outage marked as reported: " (pr-str calls)))
         (is (true? (s/ready? st)) "ready again")
         (check-lines (log-lines buf) "postgres"))
       (finally (s/close-store! st) (stop!))))))

(deftest ^:integration an-opensearch-outage-is-a-few-log-lines
  (if-not (node/url)
    (clojure.test/do-report {:type :skip :message (str "OpenSearch unavailable: " (node/skip-reason))})
    (let [{:keys [cut! restore! stop! port]} (proxy/start! (Long/parseLong (re-find #"\d+$" (node/url))))
          index (str "herald-outage-" (System/currentTimeMillis))
          st (os/open {:url (str "http://127.0.0.1:" port) :index index :max-lag-ms 0 :connect-timeout-ms 500})
          buf (ByteArrayOutputStream.)]
      (try
        (search/index! st {:id 1 :from 7 :ts 1 :occurred "2026-11-22" :subject "s" :story "outage"})
        (let [calls (capturing-output buf
                      (cut!)
                      (let [r (fail-for! 3000 #(search/search st "outage"))]
                        (restore!)
                        (is (= [7] (until-ok #(search/search st "outage"))))
                        r))]
          (is (> (long (:reported calls)) 2) (pr-str calls))
          (is (zero? (long (:other calls))) (str "every call fails, as an outage marked as reported: " (pr-str calls)))
          (check-lines (log-lines buf) "opensearch"))
        (finally (s/close-store! st) (stop!) (node/delete-index! index))))))

(deftest ^:integration a-cassandra-outage-is-a-few-log-lines
  (cass/with-node [cp]
    (let [{:keys [cut! restore! stop! port]} (proxy/start! (Long/parseLong (re-find #"\d+$" cp)))
          ;; calls fail at once while cut (no node): a longer request timeout only spares the schema's creation
          ;; on a loaded machine; the open is retried the same way (idempotent)
          ks (str "outage_" (System/currentTimeMillis))
          st (until-ok #(cassandra/open {:contact-points [(str "127.0.0.1:" port)] :request-timeout-ms 10000 :keyspace ks}))
          post {:id 1001 :ts 1001 :from 7 :occurred "2026-11-26" :subject "s" :story "outage"}
          buf (ByteArrayOutputStream.)]
      (try
        (feeds/put-outbound! st post)
        (let [calls (capturing-output buf
                      (cut!)
                      (let [r (fail-for! 3000 #(feeds/outbound st 7))]
                        (restore!)
                        (is (= [1001] (mapv :id (:items (until-ok #(feeds/outbound st 7))))))
                        r))
              ours (filter #(re-find #"herald\.feed\.outage" %) (log-lines buf))]
          (is (> (long (:reported calls)) 2) (pr-str calls))
          (is (zero? (long (:other calls))) (str "every call fails, as an outage marked as reported: " (pr-str calls)))
          ;; the driver logs its own reconnection attempts: only the outage reporter's lines are counted here
          (check-lines ours "cassandra")
          (is (not-any? stack-trace? (log-lines buf)) "no stack trace from the driver either"))
        (finally (s/close-store! st) (stop!))))))
