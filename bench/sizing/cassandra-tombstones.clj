;; bench/sizing/cassandra-tombstones.clj: Cassandra CPU of the fan-out's tombstone check (is any post of a flush
;; deleted?), two shapes, alternating on one node: `by-id` (before 2026-11-26: SELECT id FROM deleted_posts WHERE id
;; IN ?, one partition read per id) against `by-hour` (now: SELECT id FROM deleted_by_hour WHERE bucket = ? AND id
;; IN ?, one partition per hour of the posts' :ts). CALLS checks of POSTS_PER_CALL recent ids each (a few deleted).
;;   java -cp feed/src/main/clojure:feed/target/herald-feed.jar clojure.main bench/sizing/cassandra-tombstones.clj \
;;        CASSANDRA_PID CASSANDRA_PORT [ROUNDS=4] [CALLS=3000] [POSTS_PER_CALL=20]
;; It writes the keyspace herald_bench_tombstones: use a throwaway node.
(require '[herald.feed.store.cassandra :as c] '[herald.feed.store.cassandra.session :as cs]
         '[herald.feed.store.cassandra.schema :as schema] '[clojure.string :as str])
(let [[pid port rounds calls per-call] *command-line-args*]
  (def cpid (Long/parseLong pid)) (def cport port)
  (def rounds (Long/parseLong (or rounds "4"))) (def calls (Long/parseLong (or calls "3000")))
  (def per-call (Long/parseLong (or per-call "20"))))
(load-file (str (.getParent (java.io.File. ^String *file*)) "/proc.clj")) ; proc, stat-ticks, ticks, me, jit-ticks
(def feeds (c/open {:contact-points [(str "127.0.0.1:" cport)] :local-datacenter "datacenter1" :keyspace "herald_bench_tombstones"}))
(def session (.session feeds))
(def by-id (cs/prepare session "SELECT id FROM herald_bench_tombstones.deleted_posts WHERE id IN ?"))
(def by-hour (cs/prepare session "SELECT id FROM herald_bench_tombstones.deleted_by_hour WHERE bucket = ? AND id IN ?"))
(def ins-id (cs/prepare session "INSERT INTO herald_bench_tombstones.deleted_posts (id, sender, ts) VALUES (?, ?, ?)"))
(def ins-hour (cs/prepare session "INSERT INTO herald_bench_tombstones.deleted_by_hour (bucket, id, sender, ts) VALUES (?, ?, ?, ?)"))
(def ts0 (* 1000 (System/currentTimeMillis)))
(dotimes [i 200] ; some deleted posts in both tables
  (let [ts (+ ts0 (* i 997))] (cs/execute! session "" (cs/bind ins-id ts 5 ts)) (cs/execute! session "" (cs/bind ins-hour (schema/log-bucket ts) ts 5 ts))))
(def n (atom ts0))
(defn check [variant]
  (let [ids (vec (repeatedly per-call #(swap! n + 37)))]
    (if (= variant "by-id")
      (cs/execute! session "" (cs/bind by-id ids))
      (doseq [[b xs] (group-by schema/log-bucket ids)] (cs/execute! session "" (cs/bind by-hour b (vec xs)))))))
(defn run [label variant k]
  (let [c0 (ticks cpid) j0 (jit-ticks cpid) t0 (System/nanoTime)]
    (dotimes [_ k] (check variant))
    (let [s (/ (- (System/nanoTime) t0) 1e9) dc (/ (- (ticks cpid) c0) 100.0) dj (/ (- (jit-ticks cpid) j0) 100.0)]
      (println (format "cassandra_tombstones variant=%s calls=%d posts_per_call=%d wall_s=%.1f cassandra_cpu_s=%.2f jit_cpu_s=%.2f nojit_us_per_call=%.0f nojit_us_per_post=%.1f load=%s"
                       label k per-call s dc dj (/ (* (- dc dj) 1e6) k) (/ (* (- dc dj) 1e6) (* k per-call)) (first (str/split (proc "/proc/loadavg") #" "))))
      (flush))))
(doseq [v ["by-id" "by-hour"]] (run (str "warm-" v) v (quot calls 2)))
(doseq [_ (range rounds) v ["by-id" "by-hour"]] (run v v calls))
(System/exit 0)
