;; bench/sizing/opensearch-index.clj: OpenSearch CPU per post indexed by the :scale index job's writes
;; (herald.feed.store.opensearch -index-batch!: one _bulk per call, external versions, translog `request`), by
;; variant, alternating in one node: `bulk20` (20 posts per call: the index job's flush at ~200 posts/s and 100 ms),
;; `bulk200` (200 per call: the same flush at ~2,000 posts/s), `refresh5s` (20 per call into an index refreshed every
;; 5 s instead of 1 s), `nosource20` (20 per call into an index whose `_source` leaves out `subject` and `story`: they are
;; still analysed into `text`, but not stored; searches read doc values only), `nosource200` (the same, 200 per call). Posts: a 5-word subject and a 150-word story of a 40,000-word dictionary (herald-load's).
;; Prints the OpenSearch JVM's CPU (/proc/PID/stat) and this client's, per post, and the load average; nojit_us_per_post
;; leaves out the node's JIT compiler threads.
;;   java -cp feed/src/main/clojure:feed/target/herald-feed.jar clojure.main bench/sizing/opensearch-index.clj \
;;        OPENSEARCH_PID OPENSEARCH_URL [ROUNDS=3] [POSTS=4000] [VARIANTS=bulk20,bulk200,refresh5s]
;; against a node of bin/herald-cluster (`bin/herald-cluster start --dir DIR opensearch`); it writes the indexes
;; herald-bench-1s, herald-bench-5s and herald-bench-nosrc (deleted first): use a throwaway node.
(require '[herald.feed.store.opensearch :as os] '[herald.feed.store.opensearch.schema :as schema]
         '[herald.feed.store.search :as search] '[herald.json :as json] '[clojure.string :as str])
(let [[pid url rounds posts variants] *command-line-args*]
  (def opid (Long/parseLong pid))
  (def url url)
  (def rounds (Long/parseLong (or rounds "3")))
  (def posts (Long/parseLong (or posts "4000")))
  (def variants (str/split (or variants "bulk20,bulk200,refresh5s") #",")))
(load-file (str (.getParent (java.io.File. ^String *file*)) "/proc.clj")) ; proc, stat-ticks, ticks, me, jit-ticks
(def client (java.net.http.HttpClient/newHttpClient))
(doseq [i ["herald-bench-1s" "herald-bench-5s" "herald-bench-nosrc"]]
  (.send client (.build (.DELETE (java.net.http.HttpRequest/newBuilder (java.net.URI. (str url "/" i)))))
         (java.net.http.HttpResponse$BodyHandlers/discarding)))
(def s1 (os/open {:url url :index "herald-bench-1s" :refresh-interval-ms 1000}))
(def s5 (os/open {:url url :index "herald-bench-5s" :refresh-interval-ms 5000}))
(.send client (.build (-> (java.net.http.HttpRequest/newBuilder (java.net.URI. (str url "/herald-bench-nosrc")))
                          (.header "content-type" "application/json")
                          (.PUT (java.net.http.HttpRequest$BodyPublishers/ofString
                                 (json/write-str (assoc-in (schema/index-body {:shards 1 :replicas 0 :refresh-interval-ms 1000})
                                                            ["mappings" "_source"] {"excludes" ["subject" "story"]}))))))
       (java.net.http.HttpResponse$BodyHandlers/discarding))
(def sn (os/open {:url url :index "herald-bench-nosrc" :refresh-interval-ms 1000}))
(def words (let [r (java.util.Random. 42)] (vec (for [_ (range 40000)] (apply str (repeatedly (+ 3 (.nextInt r 7)) #(char (+ 97 (.nextInt r 26)))))))))
(def rnd (java.util.Random. 7))
(defn text [n] (str/join " " (repeatedly n #(nth words (.nextInt rnd (count words))))))
(def id (atom (* 1000 (System/currentTimeMillis))))
(defn batch [n] (vec (for [_ (range n)] (let [i (swap! id inc)] {:id i :ts i :from (mod i 997) :occurred "2026-11-26" :subject (text 5) :story (text 150)}))))
(def shapes {"bulk20" [s1 20] "bulk200" [s1 200] "refresh5s" [s5 20] "nosource20" [sn 20] "nosource200" [sn 200]})
(defn run [label [st per-call] n]
  (let [bs (vec (for [_ (range (quot n per-call))] (batch per-call)))
        c0 (ticks opid) j0 (jit-ticks opid) m0 (ticks me) t0 (System/nanoTime)]
    (doseq [b bs] (search/-index-batch! st b))
    (Thread/sleep 2000) ; the refreshes and merges the writes caused
    (let [s (/ (- (System/nanoTime) t0) 1e9) dc (/ (- (ticks opid) c0) 100.0) dj (/ (- (jit-ticks opid) j0) 100.0)
          dm (/ (- (ticks me) m0) 100.0)]
      (println (format "opensearch_index variant=%s posts=%d posts_per_call=%d wall_s=%.1f opensearch_cpu_s=%.2f opensearch_us_per_post=%.0f jit_cpu_s=%.2f nojit_us_per_post=%.0f client_cpu_s=%.2f load=%s"
                       label n per-call s dc (/ (* dc 1e6) n) dj (/ (* (- dc dj) 1e6) n) dm (first (str/split (proc "/proc/loadavg") #" "))))
      (flush))))
(doseq [v variants] (run (str "warm-" v) (shapes v) (quot posts 2)))
(doseq [_ (range rounds) v variants] (run v (shapes v) posts))
(System/exit 0)
