;; bench/sizing/cassandra-writes.clj: Cassandra CPU per post for the fan-out's writes, one request per row (the code
;; before 2026-11-26) against one unlogged batch per post (herald.feed.store.cassandra/deliver-all!), alternating.
;; Each post: the author copy (outbound row + id pointer), its recipients row (since the edits/deletes work) and 3
;; inbound rows of a 150-word story, after one tombstone read per call; 20 posts per call, 64 requests in flight.
;; (The 2026-11-26 figures in bench/results/feed-scale.md predate the recipients row and the tombstone read.)
;; Prints the Cassandra JVM's CPU (/proc/PID/stat) and this client's per post.
;;   java -cp feed/target/herald-feed.jar clojure.main bench/sizing/cassandra-writes.clj CASSANDRA_PID CASSANDRA_PORT
;; against a node of bin/herald-cluster (its pid and port: `bin/herald-cluster status --dir DIR`, DIR/cluster.env).
;; It writes into the keyspace herald_feed (sender 5, recipients 6 7 8): use a throwaway cluster.
(require '[herald.feed.store.cassandra :as c] '[herald.feed.store.cassandra.batch :as batch] '[herald.feed.store.cassandra.schema :as schema] '[clojure.string :as str])
(def cpid (Long/parseLong (first *command-line-args*)))
(defn ticks [pid] (let [f (str/split (second (str/split (String. (java.nio.file.Files/readAllBytes (java.nio.file.Path/of (str "/proc/" pid "/stat") (make-array String 0)))) #"\) ")) #" ")] (+ (Long/parseLong (nth f 11)) (Long/parseLong (nth f 12)))))
(def me (.pid (java.lang.ProcessHandle/current)))
(def feeds (c/open {:contact-points [(str "127.0.0.1:" (second *command-line-args*))] :local-datacenter "datacenter1" :keyspace "herald_feed"}))
(def session (.session feeds)) (def ps (.ps feeds)) (def opts (.opts feeds))
(def st @#'c/st) (def run-bounded! batch/run-bounded!) (def deliver-all! @#'c/deliver-all!) (def author-copy @#'c/author-copy)
(def story (str/join " " (repeat 150 "lorem")))
(def id (atom (* 1000 (System/currentTimeMillis))))
(defn deliveries [n] (vec (for [_ (range n)] (let [i (swap! id inc)] {:post {:id i :ts i :from 5 :occurred "2026-11-25" :subject "a b c d e" :story story} :recipients [6 7 8]}))))
(def deleted-ids @#'c/deleted-ids)
(defn old! [ds] ; the same statements as deliver-all! (tombstone read, author copy, recipients row, inbound rows), each its own request
  (let [gone (deleted-ids session ps (map (comp :id :post) ds))]
    (run-bounded! session (vec (for [{{:keys [id ts from occurred subject story] :as post} :post rs :recipients} ds
                                     :when (not (gone id))
                                     s (concat (author-copy ps post) [(st ps :insert-recipients id (vec rs))]
                                               (for [r rs] (st ps :insert-inbound r ts id from occurred subject story)))] s))
                  64 "old" identity)))
(defn new! [ds] (deliver-all! session ps opts ds))
(defn run [label f posts chunk]
  (let [c0 (ticks cpid) m0 (ticks me) t0 (System/nanoTime)]
    (doseq [part (partition-all chunk (deliveries posts))] (f (vec part)))
    (let [s (/ (- (System/nanoTime) t0) 1e9) dc (/ (- (ticks cpid) c0) 100.0) dm (/ (- (ticks me) m0) 100.0)]
      (println (format "%s posts=%d batch=%d wall=%.1fs cassandra_cpu=%.2fs us_per_post=%.0f client_cpu=%.2fs client_us_per_post=%.0f load=%s"
                       label posts chunk s dc (/ (* dc 1e6) posts) dm (/ (* dm 1e6) posts) (first (str/split (String. (java.nio.file.Files/readAllBytes (java.nio.file.Path/of "/proc/loadavg" (make-array String 0)))) #" ")))))))
(run "warm-old" old! 2000 20) (run "warm-new" new! 2000 20)
(doseq [r (range 3)] (run "old" old! 4000 20) (run "new" new! 4000 20))
(.close session)
(System/exit 0)
