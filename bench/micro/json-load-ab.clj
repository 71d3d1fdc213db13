;; bench/micro/json-load-ab.clj: herald-load's JSON before herald.json (herald.load.impl.json at d3f89f0, loaded under
;; the name old-json) against what the feed workload uses now (feed/json-body over herald.json, feed/response-field
;; over herald.json/read-field), in one JVM: a post body written, one field taken out of an answer. Best CPU ns/op
;; of 9 rounds (ThreadMXBean), old and new rounds alternating (old new new old). Run against a built herald-load.jar:
;;   mkdir -p /tmp/old-json/herald/load/impl && git show d3f89f0:load/src/main/clojure/herald/load/impl/json.clj \
;;     | sed 's/(ns herald.load.impl.json/(ns herald.load.impl.old-json/' > /tmp/old-json/herald/load/impl/old_json.clj
;;   java -Xmx1g -XX:+UseParallelGC -cp /tmp/old-json:load/target/herald-load.jar clojure.main bench/micro/json-load-ab.clj
;; Prints `json_ab case=<name> old_ns=<x> new_ns=<y> ratio=<new/old>`.
(require '[herald.json :as json] '[herald.load.impl.old-json :as old] '[herald.load.impl.feed :as feed])
(import '(java.lang.management ManagementFactory))
(def mx (ManagementFactory/getThreadMXBean))
(defn cpu-ns [n f] (let [t0 (.getCurrentThreadCpuTime mx)] (dotimes [_ n] (f)) (/ (double (- (.getCurrentThreadCpuTime mx) t0)) n)))
(def story (apply str (interpose " " (repeat 150 "lorem"))))
(def body {:from "/participant/5" :occurred "2026-11-26" :subject "a b c d e" :story story})
(def post-answer (json/write-bytes (assoc body :id 52979 :link "/participant/5/outbound/52979")))
(def part-answer (.getBytes "{\"id\":2472,\"name\":\"x\",\"link\":\"/participant/2472\"}" "UTF-8"))
(assert (= (seq (old/write-bytes body)) (seq (feed/json-body body))))
(assert (= (old/read-field post-answer "link") (feed/response-field post-answer "link")))
(defn best [n f] (dotimes [_ (* 2 n)] (f)) (apply min (repeatedly 9 #(cpu-ns n f))))
(doseq [[case n fo fnew] [["write-post-body" 200000 #(old/write-bytes body) #(feed/json-body body)]
                          ["read-field-id" 500000 #(old/read-field part-answer "id") #(feed/response-field part-answer "id")]
                          ["read-field-link" 200000 #(old/read-field post-answer "link") #(feed/response-field post-answer "link")]]]
  (let [[o1 n1 n2 o2] [(best n fo) (best n fnew) (best n fnew) (best n fo)]]
    (println (format "json_ab case=%s old_ns=%.1f new_ns=%.1f ratio=%.2f" case (min o1 o2) (min n1 n2) (/ (min n1 n2) (min o1 o2))))))
