;; bench/sizing/mix-counts.clj: what one post of a workload costs in operations, on a running bin/herald-cluster
;; under load: two snapshots SECONDS apart of the instances' request counts and cache hits (/metrics), the Cassandra
;; node's writes and reads per herald_feed table (system_views.local_write_latency / local_read_latency), Redis
;; (INFO: calls per command, keyspace hits and misses), PostgreSQL (pg_stat_database: commits, rows read and written)
;; and OpenSearch (_nodes/stats: documents indexed, queries), every delta divided by the posts acknowledged:
;;   java -cp feed/target/herald-feed.jar clojure.main bench/sizing/mix-counts.clj DIR [SECONDS=60]
;; Prints "mix <counter> per_post=<x> total=<n>" lines, "mix recipients_per_post=<x> sample=<n>" (the mean friends
;; a post went to: the list lengths of up to 5,000 post_recipients rows) and "mix posts=<n> seconds=<x> load=<x>". The inputs of the
;; sizing's per-operation split (docs/feed-sizing.md section 6).
(require '[clojure.java.shell :as sh] '[clojure.string :as str])
(import '(com.datastax.oss.driver.api.core CqlSession) '(java.net InetSocketAddress URI)
        '(java.net.http HttpClient HttpRequest HttpResponse$BodyHandlers))
(let [[dir secs] *command-line-args*
      env (into {} (for [l (str/split-lines (slurp (str dir "/cluster.env"))) :let [[k v] (str/split l #"=" 2)] :when v]
                     [k (str/replace v "'" "")]))
      http (HttpClient/newHttpClient)
      get-url (fn [u] (.body (.send http (.build (HttpRequest/newBuilder (URI. u))) (HttpResponse$BodyHandlers/ofString))))
      instances (for [[k v] env :when (str/starts-with? k "INSTANCE_PORT_")] (str "http://127.0.0.1:" v))
      num (fn [s] (Double/parseDouble s))
      metrics (fn [] (apply merge-with + (for [u instances
                                               l (str/split-lines (get-url (str u "/metrics")))
                                               :when (re-find #"^herald_feed_(requests_total|store_cache_(hits|misses)_total|fanout_submitted_total)" l)
                                               :let [[_ k v] (re-find #"^herald_feed_(\S+) (\S+)$" l)] :when k]
                                           {(str/replace k #",status=\"200\"" "") (num v)})))
      session (-> (CqlSession/builder) (.addContactPoint (InetSocketAddress. "127.0.0.1" (Integer/parseInt (env "CASSANDRA_PORT"))))
                  (.withLocalDatacenter "datacenter1") (.build))
      cassandra (fn [] (into {} (for [[kind view] [["write" "local_write_latency"] ["read" "local_read_latency"]]
                                      r (.all (.execute session (str "SELECT keyspace_name, table_name, count FROM system_views." view)))
                                      :when (= "herald_feed" (.getString r "keyspace_name"))]
                                  [(str "cassandra_" kind "_" (.getString r "table_name")) (double (.getLong r "count"))])))
      redis (fn [] (into {} (for [l (str/split-lines (:out (sh/sh "redis-cli" "-p" (env "REDIS_PORT") "INFO" "all")))
                                  :let [[_ k v] (or (re-find #"^(keyspace_hits|keyspace_misses):(\d+)" l)
                                                    (re-find #"^cmdstat_(\w+):calls=(\d+)" l))] :when k]
                              [(str "redis_" k) (num v)])))
      pg (fn [] (let [o (:out (sh/sh "psql" "-h" "127.0.0.1" "-p" (env "PG_PORT") "-U" "herald" "-d" "herald" "-At" "-F" " " "-c"
                                     "select xact_commit, tup_returned, tup_fetched, tup_inserted from pg_stat_database where datname = 'herald'"
                                     :env (assoc (into {} (System/getenv)) "PGPASSWORD" (env "PG_PASSWORD"))))
                      [c r f i] (map num (str/split (str/trim o) #" "))]
                  {"pg_xact_commit" c "pg_tup_returned" r "pg_tup_fetched" f "pg_tup_inserted" i}))
      opensearch (fn [] (let [b (get-url (str "http://127.0.0.1:" (env "OPENSEARCH_PORT") "/_nodes/_local/stats/indices/indexing,search"))]
                          {"opensearch_index_total" (num (second (re-find #"\"index_total\":(\d+)" b)))
                           "opensearch_query_total" (num (second (re-find #"\"query_total\":(\d+)" b)))}))
      snap (fn [] (let [t (System/nanoTime)] (assoc (merge (metrics) (cassandra) (redis) (pg) (opensearch)) ::t t)))
      a (snap) _ (Thread/sleep (* 1000 (long (Double/parseDouble (or secs "60"))))) b (snap)
      posts (- (b "requests_total{entity=\"outbound\",operation=\"post\"}" 0) (a "requests_total{entity=\"outbound\",operation=\"post\"}" 0))]
  (let [ls (map #(.size (.getList ^com.datastax.oss.driver.api.core.cql.Row % "recipients" Long))
                (.all (.execute session "SELECT recipients FROM herald_feed.post_recipients LIMIT 5000")))]
    (println (format "mix recipients_per_post=%.3f sample=%d" (double (/ (reduce + ls) (max 1 (count ls)))) (count ls))))
  (.close session)
  (doseq [k (sort (keys (dissoc b ::t))) :let [d (- (b k) (a k 0))] :when (pos? d)]
    (println (format "mix %s per_post=%.3f total=%.0f" k (/ d (max posts 1)) d)))
  (println (format "mix posts=%.0f seconds=%.1f load=%s" posts (/ (- (b ::t) (a ::t)) 1e9)
                   (first (str/split (String. (java.nio.file.Files/readAllBytes (java.nio.file.Path/of "/proc/loadavg" (make-array String 0)))) #" "))))
  (shutdown-agents))
