;; bench/micro/idempotency.clj: what an Idempotency-Key costs a post (issue 10, ADR 0014). Starts the feed in this
;; JVM (PROFILE embedded: a temp data dir; memory: no store), a sender with FRIENDS friends, then alternates rounds
;; of THREADS closed-loop clients posting over HTTP (keep-alive) without a key, with a fresh key per post, and
;; repeating one key per client (a retry: answered from the key record). Prints per round and mode posts/s and the
;; p50/p99 latency in ms. The client and the server share this JVM and the machine's cores.
;; Run: java -cp <feed classpath> clojure.main bench/micro/idempotency.clj
;; Env: PROFILE [embedded], POSTS [3000] per round and mode, THREADS [4], ROUNDS [3], FRIENDS [10].
(require '[herald.feed :as feed] '[herald.json :as json] '[clojure.string :as str])
(import '(java.net URI) '(java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse$BodyHandlers)
        '(java.util.concurrent Executors TimeUnit) '(java.nio.file Files) '(java.nio.file.attribute FileAttribute))

(def env #(or (System/getenv %1) %2))
(def profile (keyword (env "PROFILE" "embedded")))
(def posts (Long/parseLong (env "POSTS" "3000")))
(def threads (Long/parseLong (env "THREADS" "4")))
(def rounds (Long/parseLong (env "ROUNDS" "3")))
(def friends (Long/parseLong (env "FRIENDS" "10")))

(def dir (when (= :embedded profile) (str (Files/createTempDirectory "idem-bench-" (make-array FileAttribute 0)))))
(def sys (feed/start! {:profile profile :env {}
                       :config {:http {:port 0 :host "127.0.0.1"} :store (if dir {:data-dir dir} {})}}))
(def base (feed/url sys))
(def ^HttpClient client (HttpClient/newHttpClient))

(defn- send! [path body k]
  (let [b (cond-> (-> (HttpRequest/newBuilder (URI/create (str base path)))
                      (.header "Content-Type" "application/json")
                      (.POST (HttpRequest$BodyPublishers/ofString (json/write-str body))))
            k (.header "Idempotency-Key" ^String k))
        r (.send client (.build b) (HttpResponse$BodyHandlers/ofString))]
    (when-not (= 200 (.statusCode r)) (throw (ex-info (str "status " (.statusCode r) ": " (.body r)) {})))
    (.body r)))

(def sender (get (json/read (send! "/participant" {:name "sender"} nil) {:keywords? false}) "id"))
(dotimes [i friends]
  (let [f (get (json/read (send! "/participant" {:name (str "friend" i)} nil) {:keywords? false}) "id")]
    (send! (str "/participant/" sender "/friends") {:to (str "/participant/" f)} nil)))

(def story (str/join " " (repeat 25 "lorem ipsum dolor sit")))

(defn- run-mode [mode round]
  (let [pool (Executors/newFixedThreadPool threads)
        lat (long-array posts)
        next-i (java.util.concurrent.atomic.AtomicLong.)
        t0 (System/nanoTime)]
    (dotimes [t threads]
      (.submit pool ^Runnable
               (fn [] (loop []
                        (let [i (.getAndIncrement next-i)]
                          (when (< i posts)
                            (let [k (case mode :none nil :fresh (str "r" round "-" i "-" (random-uuid)) :repeat (str "rep-" round "-" t))
                                  s (System/nanoTime)]
                              (send! (str "/participant/" sender "/outbound") {:subject "bench" :story story} k)
                              (aset lat i (- (System/nanoTime) s))
                              (recur))))))))
    (.shutdown pool) (.awaitTermination pool 1 TimeUnit/HOURS)
    (let [secs (/ (- (System/nanoTime) t0) 1e9) sorted (sort (vec lat))
          pct (fn [p] (/ (nth sorted (min (dec posts) (long (* p posts)))) 1e6))]
      (feed/await-fanout sys 120000)
      (println (format "idempotency profile=%s round=%d key=%s posts_per_s=%.0f p50_ms=%.2f p99_ms=%.2f"
                       (name profile) round (name mode) (/ posts secs) (pct 0.5) (pct 0.99))))))

(run-mode :none 0) (run-mode :fresh 0) ; warm-up, not counted
(doseq [r (range 1 (inc rounds)) mode (if (odd? r) [:none :fresh :repeat] [:repeat :fresh :none])] (run-mode mode r))
(feed/stop! sys)
(when dir (doseq [^java.io.File f (reverse (file-seq (java.io.File. ^String dir)))] (.delete f)))
(shutdown-agents)
