;; bench/micro/flow-idle.clj: idle CPU of a herald.flow job with no input: queue-input -> f (x2) -> out (x2), optional data-dir.
;; Run: java -cp "flow/src/main/clojure:$(cat target/bench/flow-cp.txt):flow/target/classes" clojure.main bench/micro/flow-idle.clj 10 [data-dir]
;; (flow-cp.txt is written by bench/flow.sh)
(require '[herald.flow :as flow])
(import '(java.util.concurrent ArrayBlockingQueue) '(java.lang.management ManagementFactory ThreadMXBean))
(defn f [s] s)
(let [[secs data-dir] *command-line-args*
      secs (Long/parseLong (or secs "10"))
      q (ArrayBlockingQueue. 16)
      job {:workflow [[:in :f] [:f :out]]
           :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/queue-input :task/batch-timeout-ms 50}
                     {:task/name :f :task/type :function :task/fn :user/f :task/parallelism 2}
                     {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output :task/parallelism 2}]}
      h (flow/submit-job job (cond-> {:inject {:in {:queue/queue q} :out {:sink/atom (atom [])}}}
                               data-dir (assoc :data-dir data-dir)))
      ^ThreadMXBean mx (ManagementFactory/getThreadMXBean)
      flow-cpu (fn [] (into {} (for [^Thread t (.keySet (Thread/getAllStackTraces))
                                     :when (.startsWith (.getName t) "herald-flow")]
                                 [(str (.getName t) "#" (.threadId t)) (.getThreadCpuTime mx (.threadId t))])))]
  (Thread/sleep 2000)
  (let [a (flow-cpu) p0 (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean (ManagementFactory/getOperatingSystemMXBean))]
    (Thread/sleep (* 1000 secs))
    (let [b (flow-cpu) p1 (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean (ManagementFactory/getOperatingSystemMXBean))
          per (into (sorted-map) (for [[k v] b] [k (/ (- v (get a k 0)) 1e6)]))]
      (println "idle" secs "s, data-dir" (boolean data-dir) ": herald-flow threads CPU ms total"
               (format "%.1f" (reduce + (vals per))) "; process CPU ms" (format "%.1f" (/ (- p1 p0) 1e6)))
      (doseq [[k v] per] (println "  " k (format "%.2f ms" v)))))
  (flow/kill-job h)
  (shutdown-agents))
