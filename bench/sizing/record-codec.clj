;; bench/sizing/record-codec.clj: instance CPU (this thread's CPU time) to write and to read one post record of the
;; posts topic, as EDN text (before 2026-11-26) and in herald.flow's binary record codec (herald.flow.log.RecordCodec).
;; The record: {:post {...5-word subject, 150-word story...} :recipients [3 ids]}, as herald-load sends them.
;;   java -cp feed/target/herald-feed.jar clojure.main bench/sizing/record-codec.clj
(import '(herald.flow.log RecordCodec) '(java.lang.management ManagementFactory))
(def words (vec (for [i (range 40000)] (apply str (repeatedly (+ 3 (rand-int 7)) #(char (+ 97 (rand-int 26))))))))
(defn text [n] (clojure.string/join " " (repeatedly n #(rand-nth words))))
(def rec {:post {:id 1234567890123 :from 98765 :occurred "2026-11-25" :subject (text 5) :story (text 150) :ts 1795655592387976}
          :recipients [11111 22222 33333]})
(def tb (ManagementFactory/getThreadMXBean))
(defn cpu-us [f n] (dotimes [_ n] (f)) (let [t0 (.getCurrentThreadCpuTime tb)] (dotimes [_ n] (f)) (/ (- (.getCurrentThreadCpuTime tb) t0) 1e3 n)))
(def edn-s (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false] (pr-str rec)))
(def edn-b (.getBytes ^String edn-s "UTF-8"))
(def cod-b (RecordCodec/encode rec))
(println "sizes edn" (count edn-b) "codec" (count cod-b) "equal?" (= rec (RecordCodec/decode edn-b) (RecordCodec/decode cod-b)))
(dotimes [r 3]
(println "encode edn us" (cpu-us #(.getBytes ^String (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false] (pr-str rec)) "UTF-8") 20000)
         "encode codec us" (cpu-us #(RecordCodec/encode rec) 20000)
         "decode edn us" (cpu-us #(RecordCodec/decode edn-b) 20000)
         "decode codec us" (cpu-us #(RecordCodec/decode cod-b) 20000)))
