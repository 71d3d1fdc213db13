;; bench/sizing/cache-codec.clj: instance CPU (this thread's CPU time) to write and to read the values the Redis cache
;; holds (herald.feed.store.redis): a participant {:id :name}, a friend list of 3 and of 100 friendships
;; [{:id :from :to}], a hidden set of 10 ids; as EDN text (before 2026-11-26) and in herald.flow's record codec.
;;   java -cp feed/src/main/clojure:feed/target/herald-feed.jar clojure.main bench/sizing/cache-codec.clj
(require '[herald.feed.store.redis :as redis])
(import '(java.lang.management ManagementFactory))
(def tb (ManagementFactory/getThreadMXBean))
(defn cpu-us [f n] (dotimes [_ n] (f)) (let [t0 (.getCurrentThreadCpuTime tb)] (dotimes [_ n] (f)) (/ (- (.getCurrentThreadCpuTime tb) t0) 1e3 n)))
(defn friends [n] (vec (for [i (range n)] {:id (+ 900000 i) :from 4711 :to (+ 10000 (* 7 i))})))
(def values {"participant" {:id 4711 :name "participant-4711"} "friends-3" (friends 3) "friends-100" (friends 100)
             "hidden-10" (set (range 5000 5010))})
(doseq [[label v] values fmt [:edn :binary]]
  (let [b (redis/encode-value fmt v)]
    (assert (= v (redis/decode-value b)))
    (println (format "cache_codec value=%s format=%s bytes=%d encode_us=%.2f decode_us=%.2f" label (name fmt) (alength ^bytes b)
                     (cpu-us #(redis/encode-value fmt v) 20000) (cpu-us #(redis/decode-value b) 20000)))))
(shutdown-agents)
