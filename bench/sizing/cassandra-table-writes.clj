;; bench/sizing/cassandra-table-writes.clj: the local write count of each table of keyspace herald_feed on a
;; bin/herald-cluster Cassandra node (Cassandra 5's system_views.local_write_latency), one "<table> <count>" line each:
;;   java -cp feed/target/herald-feed.jar clojure.main bench/sizing/cassandra-table-writes.clj CASSANDRA_PORT
;; (used by jar-ab.sh TABLE_WRITES=1: writes per post of each table, e.g. the author copy's outbound and posts rows)
(import '(com.datastax.oss.driver.api.core CqlSession) '(java.net InetSocketAddress))
(let [[port] *command-line-args*]
  (with-open [s (-> (CqlSession/builder) (.addContactPoint (InetSocketAddress. "127.0.0.1" (Integer/parseInt port)))
                    (.withLocalDatacenter "datacenter1") (.build))]
    (doseq [r (.all (.execute s "SELECT keyspace_name, table_name, count FROM system_views.local_write_latency"))
            :when (= "herald_feed" (.getString r "keyspace_name"))]
      (println (.getString r "table_name") (.getLong r "count")))))
