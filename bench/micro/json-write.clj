;; bench/micro/json-write.clj: what herald.json/write-bytes costs against herald.json/write-str + String.getBytes, in
;; one JVM: per case, ROUNDS rounds of the two in alternating order (A B, B A, ..) after a warm-up; CPU ns per call of
;; this thread (ThreadMXBean), median of the rounds; both paths' bytes are compared first (equal for these cases).
;; write-bytes was 2-4x write-str in a Clojure JVM until da40f55 (Jackson's byte generator's String loop, see
;; docs/json.md): for a before/after, run it on da40f55~1 and da40f55 in turns (bench/results/json-write.md).
;; Run (from the repository root, after `mvn -o -q -pl json -am compile dependency:build-classpath
;; -Dmdep.outputFile=/tmp/json-cp.txt`):
;;   java -Xmx1g -XX:+UseParallelGC -cp json/src/main/clojure:json/target/classes:$(cat /tmp/json-cp.txt) \
;;     clojure.main bench/micro/json-write.clj
;; Env: ROUNDS [7], CALLS [200000] per round and path (divided by the case's size in KB, at least 20000).
;; Prints per case:
;;   json_write case=<name> bytes=<n> write_bytes_ns=<x> str_getbytes_ns=<y> ratio=<x/y> rounds=<r>
;; and a last line `json_write jvm=<version> cores=<n> load=<1-min load average at the start>`.
(require '[clojure.string :as str] '[herald.json :as json])
(import '(java.lang.management ManagementFactory)
        '(java.nio.charset StandardCharsets))
(set! *warn-on-reflection* true)

(def env #(or (System/getenv %1) %2))
(def rounds (parse-long (env "ROUNDS" "7")))
(def calls (parse-long (env "CALLS" "200000")))
(def load-at-start (.getSystemLoadAverage (ManagementFactory/getOperatingSystemMXBean)))
(def ^java.lang.management.ThreadMXBean mx (ManagementFactory/getThreadMXBean))

(defn str-bytes ^bytes [x] (.getBytes ^String (json/write-str x) StandardCharsets/UTF_8))

(defn cpu-ns [n f]
  (let [t0 (.getCurrentThreadCpuTime mx)]
    (dotimes [_ n] (f))
    (/ (double (- (.getCurrentThreadCpuTime mx) t0)) n)))

(defn median [xs] (nth (sort xs) (quot (count xs) 2)))

(def words (str/join " " (repeat 150 "lorem")))
(def cases
  [["hello" {:message "Hello, World!"}]
   ["post-body-150-words" {:from "/participant/5" :occurred "2026-11-26" :subject "a b c d e" :story words}]
   ["post-body-non-ascii" {:from "/participant/5" :occurred "2026-11-26" :subject "é à ü"
                           :story (str/join " " (repeat 100 "lorem ipsum café 世界"))}]
   ["feed-page-10-posts" {:items (vec (for [i (range 10)]
                                        {:id (+ 52979 i) :link (str "/participant/5/outbound/" (+ 52979 i))
                                         :from "/participant/5" :occurred "2026-11-26" :subject "a b c d e"
                                         :story words}))}]])

(doseq [[name x] cases]
  (assert (= (seq (json/write-bytes x)) (seq (str-bytes x))) (str name ": the paths wrote different bytes"))
  (let [size (alength (json/write-bytes x))
        n (max 20000 (quot calls (max 1 (quot size 1024))))
        paths [[:write-bytes #(json/write-bytes x)] [:str-getbytes #(str-bytes x)]]
        _ (doseq [[_ f] paths] (cpu-ns n f))
        samples (apply merge-with into
                       (for [r (range rounds)
                             [k f] (if (even? r) paths (rseq paths))]
                         {k [(cpu-ns n f)]}))
        [wb sb] (map #(median (samples %)) [:write-bytes :str-getbytes])]
    (println (format "json_write case=%s bytes=%d write_bytes_ns=%.1f str_getbytes_ns=%.1f ratio=%.2f rounds=%d"
                     name size wb sb (/ wb sb) rounds))))
(println (format "json_write jvm=%s cores=%d load=%.2f" (System/getProperty "java.version")
                 (.availableProcessors (Runtime/getRuntime)) load-at-start))
