;; bench/micro/feed-client.clj: the feed workload's user-side CPU and allocation per request, without network:
;; the requests of broadcaster iterations (10 participants, 7 friendships, 25 posts of 150-word stories) built
;; with the jar's own functions, and the answers the real feed gives handled as the jar's feed.clj does (before
;; the 2026-11-26 change every 200 body was parsed whole; now only a participant's `id`). On one thread, CPU and
;; bytes from ThreadMXBean. Compare two builds of herald-load, alternating:
;;   for j in /tmp/base.jar load/target/herald-load.jar; do java -Xmx1g -XX:+UseParallelGC -cp $j clojure.main bench/micro/feed-client.clj; done
;; (-Dbench.label=NAME names a run.) Prints `<base|new> user-side us/request: [5 runs]  bytes allocated/request: <n>`.
;; herald-load's JSON: herald.json since herald-json (2026-11-26, session 9), before it herald.load.impl.json
(def json-ns (if (try (require 'herald.json) true (catch java.io.FileNotFoundException _ false)) 'herald.json 'herald.load.impl.json))
(require '[herald.load.impl.feed :as feed] json-ns '[herald.load.impl.request :as request] '[herald.load.impl.words :as words])
(import '(java.util Random) '(java.lang.management ManagementFactory))
;; a build since 2026-11-26 has a fast dictionary form: packed (2026-11-27) or a String array (before)
(def fast-dict (or (resolve 'herald.load.impl.words/packed-dictionary) (resolve 'herald.load.impl.words/dictionary-array)))
(def new? (some? fast-dict))
(def dict (let [d (words/dictionary 40000 1)] (if new? (fast-dict d) d)))
(def body-of @#'herald.load.impl.feed/body-of)
(def opts {:body-format :json})
(def rnd (Random. 1))
(def story (words/sentence rnd (words/dictionary 40000 1) 150))
(def write-str @(ns-resolve json-ns 'write-str))
(def post-answer (.getBytes (write-str {:from "/participant/5" :occurred "2026-11-26" :subject "a b c d e" :story story :id 52979 :link "/participant/5/outbound/52979"}) "UTF-8"))
(def part-answer (.getBytes "{\"id\":2472,\"name\":\"x\",\"link\":\"/participant/2472\"}" "UTF-8"))
(def friend-answer (.getBytes "{\"id\":14891,\"from\":\"/participant/5\",\"to\":\"/participant/6\"}" "UTF-8"))
;; the workload's one-field reader: feed/response-field over herald.json/read-field, or (session 8's jar) its own
(def read-field (when new? (or (some-> (resolve 'herald.load.impl.feed/response-field) deref)
                               @(resolve 'herald.load.impl.json/read-field))))
(defn answer [^bytes b field]
  (if new? (when field (read-field b field))
      (let [m (try (@(resolve 'herald.load.impl.json/read-bytes) b) (catch Exception _ {}))] (when field (field m)))))
(def sink (volatile! 0))
(defn one-iteration []
  (dotimes [_ 10]
    (let [bs (request/encode (merge {:method :post :path "/participant"} (body-of opts {:name (words/sentence rnd dict 1)})) "127.0.0.1:8080")]
      (vswap! sink + (alength ^bytes bs) (long (or (answer part-answer (if new? "id" :id)) 0)))))
  (dotimes [_ 7]
    (let [bs (request/encode (merge {:method :post :path "/participant/5/friends"} (body-of opts {:from "/participant/5" :to "/participant/6"})) "127.0.0.1:8080")]
      (answer friend-answer nil) (vswap! sink + (alength ^bytes bs))))
  (dotimes [_ 25]
    (let [bs (request/encode (merge {:method :post :path "/participant/5/outbound"}
                                    (body-of opts {:from "/participant/5" :occurred (str (java.time.LocalDate/now))
                                                   :subject (words/sentence rnd dict 5) :story (words/sentence rnd dict 150)})) "127.0.0.1:8080")]
      (when-not new? (answer post-answer :link)) (vswap! sink + (alength ^bytes bs)))))
(def tmx (ManagementFactory/getThreadMXBean))
(defn run [n]
  (let [t0 (.getCurrentThreadCpuTime tmx) a0 (.getThreadAllocatedBytes ^com.sun.management.ThreadMXBean tmx (.getId (Thread/currentThread)))]
    (dotimes [_ n] (one-iteration))
    [(/ (- (.getCurrentThreadCpuTime tmx) t0) 1e3 (* 42.0 n))
     (/ (- (.getThreadAllocatedBytes ^com.sun.management.ThreadMXBean tmx (.getId (Thread/currentThread))) a0) (* 42.0 n))]))
(run 3000) (run 3000)
(let [rs (repeatedly 5 #(run 2000))]
  (println (format "%s user-side us/request: %s  bytes allocated/request: %.0f"
                   (or (System/getProperty "bench.label") (if new? "new" "base")) (pr-str (mapv #(Double/parseDouble (format "%.2f" (first %))) rs)) (second (last rs)))))
