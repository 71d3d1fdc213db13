(ns herald.feed.store.cassandra.session
  "The Cassandra driver session of the :feeds backend: options, connecting, running statements, driver errors
  as ex-info."
  (:require [clojure.string :as str])
  (:import (com.datastax.oss.driver.api.core AllNodesFailedException CqlSession DriverException
                                             DriverTimeoutException NoNodeAvailableException)
           (com.datastax.oss.driver.api.core.config DefaultDriverOption DriverConfigLoader
                                                    ProgrammaticDriverConfigLoaderBuilder)
           (com.datastax.oss.driver.api.core.cql AsyncResultSet PreparedStatement ResultSet Row Statement)
           (com.datastax.oss.driver.api.core.servererrors QueryValidationException ReadTimeoutException
                                                          UnavailableException WriteTimeoutException
                                                          OverloadedException)
           (java.net InetSocketAddress)
           (java.time Duration)
           (java.util.concurrent CompletableFuture CompletionException CompletionStage ExecutionException)))

(set! *warn-on-reflection* true)

(def defaults
  "The options of herald.feed.store.cassandra/open with their defaults."
  {:contact-points ["127.0.0.1:9042"]
   :local-datacenter "datacenter1"
   :keyspace "herald_feed"
   :replication {"class" "SimpleStrategy" "replication_factor" 1}
   :create-schema? true
   :consistency :local-quorum
   :request-timeout-ms 5000
   :connect-timeout-ms 10000
   :schema-timeout-ms 60000
   :node-id 0
   :fanout-concurrency 64})

(def ^:private consistencies
  {:one "ONE" :two "TWO" :three "THREE" :quorum "QUORUM" :local-quorum "LOCAL_QUORUM" :each-quorum "EACH_QUORUM"
   :all "ALL" :local-one "LOCAL_ONE"})

(defn- invalid [k v what]
  (throw (ex-info (str k " must be " what ", got " (pr-str v))
                  {:type :herald.feed.store/invalid :key k :value v})))

(defn- contact-point? [s]
  (and (string? s) (re-matches #"[^\s:]+:\d{1,5}" s) (<= 1 (parse-long (subs s (inc (str/last-index-of s ":")))) 65535)))

(defn- replication? [m]
  (and (map? m) (seq m)
       (every? (fn [[k v]] (and (or (string? k) (keyword? k)) (re-matches #"[A-Za-z0-9_.]+" (name k))
                                (or (and (int? v) (pos? (long v))) (and (string? v) (re-matches #"[A-Za-z0-9_.]+" v)))))
               m)
       (some #(= "class" (name %)) (keys m))))

(defn- check [opts k ok? what]
  (let [v (get opts k)] (when-not (ok? v) (invalid k v what))))

(defn- positive-int? [v] (and (int? v) (pos? (long v))))

(defn- check-all [opts]
  (check opts :contact-points #(and (sequential? %) (seq %) (every? contact-point? %)) "a non-empty vector of \"host:port\" strings")
  (check opts :local-datacenter #(and (string? %) (seq %)) "a non-empty string")
  (check opts :keyspace #(and (string? %) (re-matches #"[a-z][a-z0-9_]{0,47}" %)) "a keyspace name: [a-z][a-z0-9_]{0,47}")
  (check opts :replication replication? "a map of replication options with \"class\" (e.g. {\"class\" \"SimpleStrategy\" \"replication_factor\" 1})")
  (check opts :create-schema? boolean? "a boolean")
  (check opts :consistency consistencies (str "one of " (str/join " " (sort (keys consistencies)))))
  (doseq [k [:request-timeout-ms :connect-timeout-ms :schema-timeout-ms :fanout-concurrency]] (check opts k positive-int? "a positive integer"))
  (check opts :node-id #(and (int? %) (<= 0 (long %) 1023)) "an integer in 0..1023")
  opts)

(defn- split-points
  "A comma-separated \"host:port,host:port\" string (as from the environment) as a vector; anything else as is."
  [v]
  (if (string? v) (into [] (remove str/blank?) (map str/trim (str/split v #","))) v))

(defn validate
  "opts (merged over defaults) when valid, :contact-points as a vector (a comma-separated string is split);
  otherwise throws ex-info {:type :herald.feed.store/invalid :key k}."
  [opts]
  (let [opts (update opts :contact-points split-points)]
    (check-all opts)))

(defn replication-cql
  "The CQL map literal of a :replication option, e.g. {'class': 'SimpleStrategy', 'replication_factor': 1}."
  [m]
  (str "{" (str/join ", " (for [[k v] m] (str "'" (name k) "': " (if (string? v) (str "'" v "'") v)))) "}"))

(defn- config-loader
  "The driver's settings: its reference.conf defaults plus ours. Schema metadata is kept for our keyspace only and
  refreshed 100 ms after a change (not 1 s), so that creating the tables on open is quick. Server warnings are not
  logged (a WARN per multi-partition batch otherwise)."
  ^DriverConfigLoader [{:keys [keyspace consistency request-timeout-ms connect-timeout-ms schema-timeout-ms]}]
  (let [ms #(Duration/ofMillis (long %))
        ^ProgrammaticDriverConfigLoaderBuilder b (DriverConfigLoader/programmaticBuilder)]
    (-> b
        (.withStringList DefaultDriverOption/METADATA_SCHEMA_REFRESHED_KEYSPACES [keyspace])
        (.withDuration DefaultDriverOption/METADATA_SCHEMA_WINDOW (ms 100))
        (.withString DefaultDriverOption/REQUEST_CONSISTENCY ^String (consistencies consistency))
        (.withBoolean DefaultDriverOption/REQUEST_DEFAULT_IDEMPOTENCE true)
        ;; the server warns on every unlogged batch over more than 10 partitions (its default
        ;; unlogged_batch_across_partitions_warn_threshold); the fan-out's batches are grouped by replica set on
        ;; purpose (herald.feed.store.cassandra/write-grouped!), so the driver would log a WARN per batch
        (.withBoolean DefaultDriverOption/REQUEST_LOG_WARNINGS false)
        (.withDuration DefaultDriverOption/REQUEST_TIMEOUT (ms request-timeout-ms))
        (.withDuration DefaultDriverOption/CONNECTION_CONNECT_TIMEOUT (ms connect-timeout-ms))
        (.withDuration DefaultDriverOption/CONNECTION_INIT_QUERY_TIMEOUT (ms connect-timeout-ms))
        (.withDuration DefaultDriverOption/CONTROL_CONNECTION_TIMEOUT (ms connect-timeout-ms))
        (.withDuration DefaultDriverOption/METADATA_SCHEMA_REQUEST_TIMEOUT (ms schema-timeout-ms))
        ^ProgrammaticDriverConfigLoaderBuilder
        (.withDuration DefaultDriverOption/CONTROL_CONNECTION_AGREEMENT_TIMEOUT (ms schema-timeout-ms))
        (.build))))

(defn- address ^InetSocketAddress [^String s]
  (let [i (str/last-index-of s ":")]
    (InetSocketAddress. (subs s 0 i) (Integer/parseInt (subs s (inc (long i)))))))

(defn- error-type [^Throwable e]
  (cond
    (or (instance? DriverTimeoutException e) (instance? ReadTimeoutException e) (instance? WriteTimeoutException e))
    :herald.feed.store.cassandra/timeout
    (or (instance? UnavailableException e) (instance? NoNodeAvailableException e) (instance? AllNodesFailedException e)
        (instance? OverloadedException e))
    :herald.feed.store.cassandra/unavailable
    (instance? QueryValidationException e) :herald.feed.store.cassandra/invalid-query
    (and (instance? IllegalStateException e) (re-find #"(?i)closed" (str (.getMessage e)))) :herald.feed.store/closed
    :else :herald.feed.store.cassandra/error))

(defn- unwrap ^Throwable [^Throwable e]
  (if (and (or (instance? CompletionException e) (instance? ExecutionException e)) (.getCause e))
    (recur (.getCause e))
    e))

(defn wrap-error
  "The ex-info for a driver failure during what (a short description): :type ::timeout (the outcome of a write
  is unknown: it may still be applied), ::unavailable (not enough replicas or no node), ::invalid-query,
  :herald.feed.store/closed, else ::error. Other ex-infos pass through."
  [what ^Throwable e]
  (let [e (unwrap e)]
    (if (instance? clojure.lang.ExceptionInfo e)
      e
      (ex-info (str "cassandra: " what " failed: " (.getMessage e)) {:type (error-type e) :op what} e))))

(defmacro with-errors
  "Runs body; a driver exception becomes the ex-info of wrap-error."
  [what & body]
  `(try ~@body
        (catch DriverException e# (throw (wrap-error ~what e#)))
        (catch IllegalStateException e# (throw (wrap-error ~what e#)))
        (catch CompletionException e# (throw (wrap-error ~what e#)))))

(defn connect
  "An open CqlSession for validated opts (no keyspace set: statements name it). Throws ex-info
  {:type :herald.feed.store.cassandra/unavailable :key :contact-points} when no node answers."
  ^CqlSession [{:keys [contact-points local-datacenter] :as opts}]
  (try
    (-> (CqlSession/builder)
        (.addContactPoints ^java.util.Collection (mapv address contact-points))
        (.withLocalDatacenter ^String local-datacenter)
        (.withConfigLoader (config-loader opts))
        (.build))
    (catch DriverException e
      (throw (ex-info (str "cassandra: cannot connect to " (str/join ", " contact-points) " (datacenter "
                           local-datacenter "): " (.getMessage e))
                      {:type :herald.feed.store.cassandra/unavailable :key :contact-points :value contact-points} e)))))

(defn execute!
  "Runs a statement (a CQL string or a Statement) synchronously; returns the ResultSet."
  ^ResultSet [^CqlSession session what stmt]
  (with-errors what
    (if (string? stmt) (.execute session ^String stmt) (.execute session ^Statement stmt))))

(defn execute-async
  "Runs a Statement asynchronously; returns a CompletableFuture of its AsyncResultSet."
  ^CompletableFuture [^CqlSession session ^Statement stmt]
  (.toCompletableFuture ^CompletionStage (.executeAsync session stmt)))

(defn prepare
  "A PreparedStatement for cql."
  ^PreparedStatement [^CqlSession session ^String cql]
  (with-errors (str "preparing " cql) (.prepare session cql)))

(defn bind
  "A BoundStatement of ps with the positional values args."
  ^Statement [^PreparedStatement ps & args]
  (.bind ps (object-array args)))

(defn rows
  "Every row of a synchronous ResultSet (fetching further pages as needed), mapped by f."
  [f ^ResultSet rs]
  (mapv f (iterator-seq (.iterator rs))))

(defn first-page-rows
  "The rows of the current page of an AsyncResultSet, mapped by f."
  [f ^AsyncResultSet rs]
  (mapv f (.currentPage rs)))

(defn await-all
  "Waits for every CompletableFuture of futs and returns their values in order; what names the work for errors."
  [what futs]
  (let [futs (vec futs)]
    (with-errors what
      (.join (CompletableFuture/allOf (into-array CompletableFuture futs)))
      (mapv #(.join ^CompletableFuture %) futs))))

(defn row-long
  "A bigint column of row by name."
  ^long [^Row row ^String col]
  (.getLong row col))
