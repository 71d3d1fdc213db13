;; bench/sizing/cassandra-batches.clj: Cassandra CPU per post for the fan-out's writes (herald.feed.store.cassandra
;; deliver-all!), two batch shapes, alternating: `per-post` (the code before 2026-11-26 04:00: one unlogged batch of at
;; most 10 statements per post, the posts of a call concurrently) against `grouped` (deliver-all! now: the rows of
;; every post of the call in unlogged batches per replica set, at most 64 statements and 32 KiB each). Each post: the
;; author copy (outbound row + id pointer), its recipients row and RECIPIENTS inbound rows of a 150-word story, after
;; one tombstone read per call; POSTS_PER_CALL posts per call (a fan-out flush), 64 requests in flight.
;; STORY_WORDS (environment, default 150) sets the story's length: a row's fixed cost against its bytes.
;; Prints the Cassandra JVM's CPU (/proc/PID/stat) and this client's, per post, and the load average; nojit_us_per_post
;; leaves out the node's JIT compiler threads (a restarted node compiles for minutes: warm-up, not a cost per post).
;;   java -cp feed/target/herald-feed.jar clojure.main bench/sizing/cassandra-batches.clj CASSANDRA_PID CASSANDRA_PORT \
;;        [POSTS_PER_CALL=20] [RECIPIENTS=3] [ROUNDS=3] [POSTS=4000] [VARIANTS=per-post,grouped]
;; against a node of bin/herald-cluster (its pid and port: `bin/herald-cluster status --dir DIR`, DIR/cluster.env).
;; It writes into the keyspace herald_feed (sender 5, recipients 1000..): use a throwaway cluster.
(require '[herald.feed.store.cassandra :as c] '[herald.feed.store.cassandra.batch :as batch] '[clojure.string :as str])
(let [[pid port per-call recips rounds posts variants] *command-line-args*]
  (def cpid (Long/parseLong pid))
  (def cport port)
  (def per-call (Long/parseLong (or per-call "20")))
  (def recips (Long/parseLong (or recips "3")))
  (def rounds (Long/parseLong (or rounds "3")))
  (def posts (Long/parseLong (or posts "4000")))
  (def variants (str/split (or variants "per-post,grouped") #",")))
(load-file (str (.getParent (java.io.File. ^String *file*)) "/proc.clj")) ; proc, stat-ticks, ticks, me, jit-ticks
(def feeds (c/open {:contact-points [(str "127.0.0.1:" cport)] :local-datacenter "datacenter1" :keyspace "herald_feed"}))
(def session (.session feeds)) (def ps (.ps feeds)) (def opts (.opts feeds))
(def st @#'c/st) (def run-bounded! batch/run-bounded!) (def deliver-all! @#'c/deliver-all!) (def author-copy @#'c/author-copy)
(def unlogged batch/unlogged) (def deleted-ids @#'c/deleted-ids)
(def story (str/join " " (repeat (Long/parseLong (or (System/getenv "STORY_WORDS") "150")) "lorem"))) ; STORY_WORDS: the cost of a row's bytes
(def id (atom (* 1000 (System/currentTimeMillis))))
(defn deliveries [n]
  (vec (for [_ (range n)] (let [i (swap! id inc)]
                            {:post {:id i :ts i :from 5 :occurred "2026-11-25" :subject "a b c d e" :story story}
                             :recipients (vec (range (+ 1000 (* recips (mod i 97))) (+ 1000 (* recips (inc (mod i 97))))))}))))
(defn per-post! [ds] ; deliver-all! before 2026-11-26 04:00: a post's rows in unlogged batches of at most 10
  (let [gone (deleted-ids session ps (map (comp :id :post) ds))]
    (run-bounded! session (vec (for [{{:keys [id ts from occurred subject story] :as post} :post rs :recipients} ds
                                     :when (not (gone id))
                                     chunk (partition-all 10 (concat (author-copy ps post) [(st ps :insert-recipients id (vec rs))]
                                                                     (for [r rs] (st ps :insert-inbound r ts id from occurred subject story))))]
                                 (unlogged chunk)))
                  64 "per-post" identity)))
(defn grouped! [ds] (deliver-all! session ps opts ds))
(def fns {"per-post" per-post! "grouped" grouped!})
(defn run [label f n]
  (let [c0 (ticks cpid) j0 (jit-ticks cpid) m0 (ticks me) t0 (System/nanoTime)]
    (doseq [part (partition-all per-call (deliveries n))] (f (vec part)))
    (let [s (/ (- (System/nanoTime) t0) 1e9) dc (/ (- (ticks cpid) c0) 100.0) dj (/ (- (jit-ticks cpid) j0) 100.0)
          dm (/ (- (ticks me) m0) 100.0)]
      (println (format "cassandra_batches variant=%s posts=%d posts_per_call=%d recipients=%d wall_s=%.1f cassandra_cpu_s=%.2f cassandra_us_per_post=%.0f jit_cpu_s=%.2f nojit_us_per_post=%.0f client_cpu_s=%.2f client_us_per_post=%.0f load=%s"
                       label n per-call recips s dc (/ (* dc 1e6) n) dj (/ (* (- dc dj) 1e6) n) dm (/ (* dm 1e6) n) (first (str/split (proc "/proc/loadavg") #" "))))
      (flush))))
(doseq [v variants] (run (str "warm-" v) (fns v) (quot posts 2)))
(doseq [_ (range rounds) v variants] (run v (fns v) posts))
(.close session)
(System/exit 0)
