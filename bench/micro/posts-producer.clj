;; bench/micro/posts-producer.clj: the feed's posts producer (herald.feed.events.kafka/producer) with and without
;; compression, against a running broker, as a publish uses it: each send waits for its acknowledgement (acks=all,
;; idempotent), THREADS senders at once, a post record of the reference workload's size in flow's record codec.
;; Alternates the codecs ROUNDS times; prints per round the client's CPU and allocation per send (this JVM: its
;; sender threads and the producer's network thread) and the broker's CPU per send (/proc of BROKER_PID).
;; Run: java -cp feed/target/herald-feed.jar clojure.main bench/micro/posts-producer.clj
;; Env: BOOTSTRAP (host:port, required), BROKER_PID (optional), SENDS [4000] per round, THREADS [16], ROUNDS [3],
;; CODECS ["none lz4"].
(require '[herald.feed.events.kafka :as kafka] '[clojure.string :as str])
(import '(java.lang.management ManagementFactory) '(java.util.concurrent Executors TimeUnit))

(def env #(or (System/getenv %1) %2))
(def bootstrap (env "BOOTSTRAP" nil))
(def broker-pid (env "BROKER_PID" nil))
(def sends (Long/parseLong (env "SENDS" "4000")))
(def threads (Long/parseLong (env "THREADS" "16")))
(def rounds (Long/parseLong (env "ROUNDS" "3")))
(def codecs (str/split (env "CODECS" "none lz4") #" "))

(defn- broker-ticks [] (when broker-pid (let [f (str/split (java.nio.file.Files/readString (java.nio.file.Path/of (str "/proc/" broker-pid "/stat") (make-array String 0))) #" ")] (+ (Long/parseLong (nth f 13)) (Long/parseLong (nth f 14))))))
(def ^com.sun.management.OperatingSystemMXBean os (ManagementFactory/getOperatingSystemMXBean))
(def ^com.sun.management.ThreadMXBean tmx (ManagementFactory/getThreadMXBean))

(def record ; a post record as the feed appends it: ~200 characters of story, 20 recipients
  (kafka/record-bytes {:post {:id 123456789012 :ts 1764150000000000 :from 4711 :occurred "2026-11-26"
                              :subject "a subject of some words" :story (apply str (repeat 20 "lorem ipsum "))}
                       :recipients (vec (range 5000 5020))}))

(defn- round [codec]
  (let [o (kafka/check {:bootstrap-servers bootstrap :topic-prefix "bench-producer-" :producer {"compression.type" codec}})
        {:keys [posts]} (kafka/ensure-topics! o)
        p (kafka/producer o)
        pool (Executors/newFixedThreadPool threads)]
    (try
      (dotimes [i 200] (kafka/send! p posts (str (mod i 97)) record 10000))   ; warm the connection and the code
      (let [c0 (.getProcessCpuTime os) a0 (.getTotalThreadAllocatedBytes tmx) b0 (broker-ticks) t0 (System/nanoTime)
            per (quot sends threads)
            fs (doall (for [t (range threads)]
                        (.submit pool ^Callable (fn [] (dotimes [i per] (kafka/send! p posts (str (+ (* t 1000) i)) record 10000))))))]
        (run! deref fs)
        (let [n (* per threads) secs (/ (- (System/nanoTime) t0) 1e9)
              cpu-us (/ (- (.getProcessCpuTime os) c0) 1e3 n) alloc (/ (- (.getTotalThreadAllocatedBytes tmx) a0) n)
              b (when b0 (/ (* 1e6 (/ (- (broker-ticks) b0) 100.0)) n))]
          (println (format "posts_producer codec=%s sends=%d sends_per_s=%.0f client_cpu_us_per_send=%.1f client_alloc_bytes_per_send=%.0f broker_cpu_us_per_send=%s record_bytes=%d load=%s"
                           codec n (/ n secs) cpu-us (double alloc) (if b (format "%.1f" b) "na") (alength ^bytes record)
                           (first (str/split (java.nio.file.Files/readString (java.nio.file.Path/of "/proc/loadavg" (make-array String 0))) #" "))))))
      (finally (.shutdown pool) (.close p)))))

(when-not bootstrap (binding [*out* *err*] (println "BOOTSTRAP is required")) (System/exit 2))
(dotimes [_ rounds] (doseq [c codecs] (round c)))
(shutdown-agents)
