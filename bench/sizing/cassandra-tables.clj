;; bench/sizing/cassandra-tables.clj: Cassandra CPU per post of the fan-out's writes (deliver-all!, as
;; cassandra-batches.clj's `grouped`) under table options, alternating on ONE warm node (no restart between variants:
;; a restarted node's JIT compiles for minutes and was half of its CPU in cassandra-config.sh's rounds). Each variant
;; is a keyspace of the backend's tables, altered:
;;   default      the tables as herald.feed.store.cassandra.schema creates them (skip-list memtable, LZ4 16 KiB chunks)
;;   trie         memtable = 'trie' (Cassandra 5's trie memtable; the node's cassandra.yaml must define it)
;;   nocompress   compression disabled (no LZ4 at flush and compaction; ~2x the disk)
;;   story20      the default tables, 20-word stories instead of 150: what a row's bytes cost against its count
;; Prints per round the node's CPU per post without its JIT threads (nojit_us_per_post) and with them.
;;   java -cp feed/src/main/clojure:feed/target/herald-feed.jar clojure.main bench/sizing/cassandra-tables.clj \
;;        CASSANDRA_PID CASSANDRA_PORT [ROUNDS=4] [POSTS=4000] [VARIANTS=default,trie,nocompress,story20]
;; It writes the keyspaces herald_bench_<variant>: use a throwaway node (bin/herald-cluster start --dir DIR cassandra).
(require '[herald.feed.store.cassandra :as c] '[herald.feed.store.cassandra.session :as cs] '[clojure.string :as str])
(let [[pid port rounds posts variants] *command-line-args*]
  (def cpid (Long/parseLong pid))
  (def cport port)
  (def rounds (Long/parseLong (or rounds "4")))
  (def posts (Long/parseLong (or posts "4000")))
  (def variants (str/split (or variants "default,trie,nocompress,story20") #",")))
(load-file (str (.getParent (java.io.File. ^String *file*)) "/proc.clj")) ; proc, stat-ticks, ticks, me, jit-ticks
(def alters {"trie" "memtable = 'trie'" "nocompress" "compression = {'enabled': 'false'}"})
(defn open-variant [v]
  (let [feeds (c/open {:contact-points [(str "127.0.0.1:" cport)] :local-datacenter "datacenter1"
                       :keyspace (str "herald_bench_" v)})]
    (when-let [a (alters v)]
      (doseq [t ["inbound" "outbound" "posts" "post_recipients"]]
        (cs/execute! (.session feeds) "altering" (str "ALTER TABLE herald_bench_" v "." t " WITH " a))))
    feeds))
(def stores (into {} (for [v variants] [v (open-variant v)])))
(def deliver-all! @#'c/deliver-all!)
(defn story [words] (str/join " " (repeat words "lorem")))
(def id (atom (* 1000 (System/currentTimeMillis))))
(defn deliveries [n words]
  (let [s (story words)]
    (vec (for [_ (range n)] (let [i (swap! id inc)]
                              {:post {:id i :ts i :from 5 :occurred "2026-11-26" :subject "a b c d e" :story s}
                               :recipients (vec (range (+ 1000 (* 3 (mod i 97))) (+ 1000 (* 3 (inc (mod i 97))))))})))))
(defn run [label v n]
  (let [feeds (stores v) ds (deliveries n (if (= v "story20") 20 150))
        c0 (ticks cpid) j0 (jit-ticks cpid) t0 (System/nanoTime)]
    (doseq [part (partition-all 20 ds)] (deliver-all! (.session feeds) (.ps feeds) (.opts feeds) (vec part)))
    (let [s (/ (- (System/nanoTime) t0) 1e9) dc (/ (- (ticks cpid) c0) 100.0) dj (/ (- (jit-ticks cpid) j0) 100.0)]
      (println (format "cassandra_tables variant=%s posts=%d wall_s=%.1f cassandra_cpu_s=%.2f jit_cpu_s=%.2f us_per_post=%.0f nojit_us_per_post=%.0f load=%s"
                       label n s dc dj (/ (* dc 1e6) n) (/ (* (- dc dj) 1e6) n) (first (str/split (proc "/proc/loadavg") #" "))))
      (flush))))
(doseq [v variants] (run (str "warm-" v) v (quot posts 2)))
(doseq [_ (range rounds) v variants] (run v v posts))
(System/exit 0)
