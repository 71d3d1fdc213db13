(ns herald.feed.store.postgres.jdbc
  "Plain JDBC for the PostgreSQL backend: pool options as data (validated), a HikariCP pool, statements with
  parameters, and driver errors turned into ex-info."
  (:require [clojure.string :as str])
  (:import (com.zaxxer.hikari HikariConfig HikariDataSource)
           (java.sql Connection PreparedStatement ResultSet SQLException SQLTransientConnectionException)))

(set! *warn-on-reflection* true)

(def defaults
  "Pool and connection options of herald.feed.store.postgres/open, with their defaults."
  {:jdbc-url "jdbc:postgresql://127.0.0.1:5432/herald"
   :user "herald"
   :password ""
   :schema "public"
   :pool-size 10
   :connection-timeout-ms 5000
   :statement-timeout-ms 10000
   :max-lifetime-ms 1800000})

(defn- bad [k v what]
  (throw (ex-info (str "postgres option " k " must be " what ", got " (pr-str v))
                  {:type :herald.feed.store/invalid :key k :value v})))

(defn validate
  "opts (merged over defaults) or ex-info {:type :herald.feed.store/invalid :key k} naming the bad key."
  [opts]
  (let [{:keys [jdbc-url user password schema]} opts]
    (doseq [k (keys opts) :when (not (contains? defaults k))]
      (bad k (get opts k) (str "absent: not a postgres option (they are " (pr-str (vec (sort (keys defaults)))) ")")))
    (when-not (and (string? jdbc-url) (str/starts-with? jdbc-url "jdbc:postgresql:"))
      (bad :jdbc-url jdbc-url "a string jdbc:postgresql://host:port/database"))
    (when-not (string? user) (bad :user user "a string"))
    (when-not (string? password) (bad :password "<hidden>" "a string"))
    (when-not (and (string? schema) (re-matches #"[a-z_][a-z0-9_]{0,62}" schema))
      (bad :schema schema "a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)"))
    (doseq [[k lo hi] [[:pool-size 1 1000] [:connection-timeout-ms 250 600000]
                       [:statement-timeout-ms 0 3600000] [:max-lifetime-ms 30000 86400000]]]
      (let [v (get opts k)]
        (when-not (and (int? v) (<= (long lo) (long v) (long hi)))
          (bad k v (str "an integer in " lo ".." hi)))))
    opts))

(defn pool
  "A HikariCP pool for validated opts: autocommit connections whose search_path is the schema."
  ^HikariDataSource [{:keys [jdbc-url user password schema pool-size connection-timeout-ms
                             statement-timeout-ms max-lifetime-ms]}]
  (let [c (doto (HikariConfig.)
            (.setPoolName "herald-feed-postgres")
            (.setJdbcUrl jdbc-url)
            (.setUsername user)
            (.setPassword password)
            (.setMaximumPoolSize (int pool-size))
            (.setMinimumIdle (int (min 2 (long pool-size))))
            (.setConnectionTimeout (long connection-timeout-ms))
            (.setMaxLifetime (long max-lifetime-ms))
            (.setAutoCommit true)
            ;; open even when the server is down: the first statement reports it (ex-info :unavailable)
            (.setInitializationFailTimeout -1)
            (.setConnectionInitSql (str "SET search_path TO " schema "; SET statement_timeout = "
                                        statement-timeout-ms))
            (.addDataSourceProperty "ApplicationName" "herald-feed"))]
    (HikariDataSource. c)))

(defn- unavailable-state? [^String state]
  (and state (some #(str/starts-with? state %) ["08" "53" "57" "58" "40"])))

(defn error
  "The ex-info for a driver exception e while doing what: :herald.feed.store/unavailable when the server cannot be
  reached or refuses for now (connection, resources, shutdown, serialization: retry later), else
  :herald.feed.store.postgres/sql-error; both carry :sql-state."
  [what ^Throwable e]
  (let [state (when (instance? SQLException e) (.getSQLState ^SQLException e))
        unavailable? (or (instance? SQLTransientConnectionException e) (unavailable-state? state))]
    (ex-info (str "postgres: " what " failed: " (ex-message e)
                  ;; Hikari's timeout hides why no connection could be made: the driver's error is its cause
                  (when-let [root (last (take-while some? (iterate ex-cause (ex-cause e))))]
                    (str " (" (or (not-empty (ex-message root)) (.getName (class root))) ")")))
             {:type (if unavailable? :herald.feed.store/unavailable :herald.feed.store.postgres/sql-error)
              :sql-state state}
             e)))

(defn- set-params! [^PreparedStatement ps params]
  (loop [i 1 [p & more :as ps*] params]
    (when (seq ps*)
      (cond (instance? Long p) (.setLong ps i (long p))
            (string? p) (.setString ps i ^String p)
            (bytes? p) (.setBytes ps i ^bytes p)
            :else (.setObject ps i p))
      (recur (inc i) more))))

(defn query
  "Runs sql with params on conn; returns (row-fn rs) for every row, in a vector."
  [^Connection conn ^String sql params row-fn]
  (with-open [ps (.prepareStatement conn sql)]
    (set-params! ps params)
    (with-open [rs (.executeQuery ps)]
      (loop [acc (transient [])]
        (if (.next rs) (recur (conj! acc (row-fn rs))) (persistent! acc))))))

(defn query-each
  "Runs `sql`, statements separated by `;`, with `params` (numbered across the statements) on conn; returns, for
  each statement's result set in order, the vector of (row-fn rs) of its rows (`row-fns`: one per result set).
  pgjdbc sends the statements together and syncs once: one round trip and, on an autocommit connection, one
  implicit transaction (a `pg_advisory_xact_lock` taken by the first holds until the last has run), each
  statement reading a snapshot taken when it starts (READ COMMITTED). An error in one skips the rest and rolls
  the whole back."
  [^Connection conn ^String sql params row-fns]
  (with-open [ps (.prepareStatement conn sql)]
    (set-params! ps params)
    (loop [more? (.execute ps) [f & fs] row-fns acc []]
      (if (or more? (not= -1 (.getUpdateCount ps)))
        (if more?
          (let [rows (with-open [rs (.getResultSet ps)]
                       (loop [rows (transient [])] (if (.next rs) (recur (conj! rows (f rs))) (persistent! rows))))]
            (recur (.getMoreResults ps) fs (conj acc rows)))
          (recur (.getMoreResults ps) (cons f fs) acc))
        acc))))

(defn execute!
  "Runs a statement without results on conn (DDL, updates)."
  [^Connection conn ^String sql]
  (with-open [st (.createStatement conn)]
    (.execute st sql)))

(defn long-col
  "Column i (1-based) of the current row as a long."
  ^long [^ResultSet rs i]
  (.getLong rs (int i)))

(defn bytes-col
  "Column i (1-based) of the current row as bytes."
  ^bytes [^ResultSet rs i]
  (.getBytes rs (int i)))
