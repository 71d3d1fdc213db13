;; bench/sizing/opensearch-layout.clj: what the index layout costs OpenSearch per post (issue 10), format 1 (subject,
;; story and occurred in `_source`, copied to `text`) against format 2 (`text` = [subject story], `_source` keeps the
;; mark only), alternating in one node, bulks of PER_CALL posts through -index-batch! (the index job's writes).
;; Per round and format: the node's CPU per post without its JIT threads (/proc), then, exactly, from the index's
;; _stats: bytes on disk per post (after a refresh and a flush), translog bytes per post, index_time per post, and
;; the refresh, flush and merge times. Posts: a 5-word subject and a 150-word story of a 40,000-word dictionary.
;;   java -cp feed/src/main/clojure:feed/target/herald-feed.jar clojure.main bench/sizing/opensearch-layout.clj \
;;        OPENSEARCH_PID OPENSEARCH_URL [ROUNDS=3] [POSTS=4000] [PER_CALL=200]
;; It writes the indexes herald-layout-1 and herald-layout-2 (deleted first, and at the end): use a throwaway node.
(require '[herald.feed.store.opensearch :as os] '[herald.feed.store.opensearch.schema :as schema]
         '[herald.feed.store.search :as search] '[herald.feed.store :as s] '[herald.json :as json]
         '[clojure.string :as str])
(let [[pid url rounds posts per-call] *command-line-args*]
  (def opid (Long/parseLong pid))
  (def url url)
  (def rounds (Long/parseLong (or rounds "3")))
  (def posts (Long/parseLong (or posts "4000")))
  (def per-call (Long/parseLong (or per-call "200"))))
(load-file (str (.getParent (java.io.File. ^String *file*)) "/proc.clj")) ; proc, ticks, jit-ticks
(def client (java.net.http.HttpClient/newHttpClient))
(defn req [method path]
  (let [b (-> (java.net.http.HttpRequest/newBuilder (java.net.URI. (str url path))) (.method method (java.net.http.HttpRequest$BodyPublishers/noBody)))]
    (json/read (.body (.send client (.build b) (java.net.http.HttpResponse$BodyHandlers/ofString))))))

;; format 1, as it was before issue 10's change (the "before" of this A/B)
(def format2-body schema/index-body)
(defn format1-body [o]
  (-> (format2-body o)
      (update "mappings" dissoc "_source")
      (assoc-in ["mappings" "_meta" "herald_format"] 1)
      (update-in ["mappings" "properties"] merge
                 {"occurred" {"type" "keyword" "index" false "doc_values" false}
                  "subject" {"type" "text" "index" false "copy_to" "text"}
                  "story" {"type" "text" "index" false "copy_to" "text"}})))
(defn format1-document [{:keys [id from ts occurred subject story]}]
  {"id" id "from" from "ts" ts "occurred" occurred "subject" subject "story" story})

(doseq [i ["herald-layout-1" "herald-layout-2"]] (req "DELETE" (str "/" i)))
(def s1 (with-redefs [schema/index-body format1-body]
          (os/open {:url url :index "herald-layout-1"})))
(def s2 (os/open {:url url :index "herald-layout-2"}))
(def layouts {"format1" [s1 #(with-redefs [schema/document format1-document] (%))] "format2" [s2 #(%)]})

(def words (let [r (java.util.Random. 42)] (vec (for [_ (range 40000)] (apply str (repeatedly (+ 3 (.nextInt r 7)) #(char (+ 97 (.nextInt r 26)))))))))
(def rnd (java.util.Random. 7))
(defn text [n] (str/join " " (repeatedly n #(nth words (.nextInt rnd (count words))))))
(def id (atom (* 1000 (System/currentTimeMillis))))
(defn batch [n] (vec (for [_ (range n)] (let [i (swap! id inc)] {:id i :ts i :from (mod i 997) :occurred "2026-11-26" :subject (text 5) :story (text 150)}))))

(defn stats [index]
  (get-in (req "GET" (str "/" index "/_stats/indexing,store,translog,refresh,flush,merge,docs")) ["indices" index "primaries"]))
(defn delta [a b path] (- (long (get-in b path 0)) (long (get-in a path 0))))

(defn run [label n]
  (let [[st wrap] (layouts label) index (:index st)
        bs (vec (for [_ (range (quot n per-call))] (batch per-call)))
        a (stats index) c0 (ticks opid) j0 (jit-ticks opid)]
    (wrap #(doseq [b bs] (search/-index-batch! st b)))
    (Thread/sleep 3000) ; the refreshes and merges the writes caused
    (let [dc (/ (- (ticks opid) c0) 100.0) dj (/ (- (jit-ticks opid) j0) 100.0)
          b (stats index)
          per #(/ (double %) n)]
      (println (format (str "opensearch_layout variant=%s posts=%d posts_per_call=%d nojit_us_per_post=%.0f"
                            " index_us_per_post=%.1f translog_b_per_post=%.0f refresh_ms=%d flush_ms=%d merge_ms=%d"
                            " merged_docs=%d load=%s")
                       label n per-call (/ (* (- dc dj) 1e6) n)
                       (per (* 1000 (delta a b ["indexing" "index_time_in_millis"])))
                       (per (delta a b ["translog" "size_in_bytes"]))
                       (delta a b ["refresh" "total_time_in_millis"]) (delta a b ["flush" "total_time_in_millis"])
                       (delta a b ["merges" "total_time_in_millis"]) (delta a b ["merges" "total_docs"])
                       (first (str/split (proc "/proc/loadavg") #" "))))
      (flush))))

;; after each round: a flush and a merge of the whole index into one segment (what every merge pass costs per post
;; held), the node's CPU for both, and the segments' bytes per post from _segments (exact; _stats' store is cached)
(defn seg-bytes [index]
  (reduce + (for [[_ shards] (get-in (req "GET" (str "/" index "/_segments")) ["indices" index "shards"])
                  sh shards [_ seg] (get sh "segments")] (long (get seg "size_in_bytes")))))
(defn merge-all [label]
  (let [[st] (layouts label) index (:index st) c0 (ticks opid) j0 (jit-ticks opid)]
    (req "POST" (str "/" index "/_flush"))
    (let [before (seg-bytes index)]
      (req "POST" (str "/" index "/_forcemerge?max_num_segments=1"))
      (req "POST" (str "/" index "/_refresh")) ; the searcher lets go of the segments merged away
      (let [dc (/ (- (ticks opid) c0) 100.0) dj (/ (- (jit-ticks opid) j0) 100.0)
            docs (long (get-in (stats index) ["docs" "count"]))]
        (println (format "opensearch_layout_merge variant=%s docs=%d flush_merge_nojit_us_per_post=%.0f segment_b_per_post=%.0f merged_b_per_post=%.0f load=%s"
                         label docs (/ (* (- dc dj) 1e6) docs) (/ (double before) docs)
                         (/ (double (seg-bytes index)) docs) (first (str/split (proc "/proc/loadavg") #" "))))
        (flush)))))
(doseq [v (keys layouts)] (run v (quot posts 2)) (merge-all v)) ; warm-up
(doseq [_ (range rounds) v (keys layouts)] (run v posts) (merge-all v))
(doseq [st [s1 s2]] (s/close-store! st) (req "DELETE" (str "/" (:index st))))
(System/exit 0)
