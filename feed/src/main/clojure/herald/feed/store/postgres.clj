(ns herald.feed.store.postgres
  "Participants and friendships on PostgreSQL (plain JDBC over a HikariCP pool): the :scale store's :graph role."
  (:require [herald.feed.quiet]
            [herald.feed.outage :as outage]
            [herald.feed.store :as store]
            [herald.feed.store.postgres.jdbc :as jdbc]
            [herald.feed.store.postgres.schema :as schema])
  (:import (com.zaxxer.hikari HikariDataSource HikariPoolMXBean)
           (java.nio.charset StandardCharsets)
           (java.sql Connection)
           (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

(defn- failure
  "The ex-info for driver exception e while doing what; an outage (:herald.feed.store/unavailable) is reported to
  the outage reporter and marked as reported."
  [reporter what e]
  (let [x (jdbc/error what e)]
    (if (= :herald.feed.store/unavailable (:type (ex-data x)))
      (do (outage/failed! reporter x)
          (ex-info (ex-message x) (outage/reported (ex-data x) reporter) (ex-cause x)))
      x)))

(defmacro ^:private with-conn
  "Runs body with `conn` bound to a pooled connection of the store (fields ds, open?, reporter); a driver error
  becomes ex-info (see herald.feed.store.postgres.jdbc/error), an outage is reported (herald.feed.outage: the
  store is not ready until the next success)."
  [what & body]
  `(do
     (when-not (.get ~(with-meta 'open? {:tag `AtomicBoolean}))
       (throw (ex-info "the store is closed" {:type :herald.feed.store/closed})))
     (try
       (let [r# (with-open [~(with-meta 'conn {:tag `Connection}) (.getConnection ~(with-meta 'ds {:tag `HikariDataSource}))]
                  ~@body)]
         (outage/ok! ~'reporter)
         r#)
       (catch java.sql.SQLException e#
         (throw (failure ~'reporter ~what e#))))))

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(defn- string ^String [^bytes b] (String. b StandardCharsets/UTF_8))

(def ^:private friends-sql
  "SELECT id, hi FROM friendships WHERE lo = ? UNION ALL SELECT id, lo FROM friendships WHERE hi = ? ORDER BY 2")

(deftype PostgresStore [^HikariDataSource ds ^AtomicBoolean open? reporter]
  store/ParticipantStore
  (-create-participant! [_ name]
    (with-conn "creating a participant"
      (let [id (first (jdbc/query conn "INSERT INTO participants (name) VALUES (?) RETURNING id" [(utf8 name)]
                                  #(jdbc/long-col % 1)))]
        {:id id :name name})))
  (-participant [_ id]
    (with-conn "reading a participant"
      (when-let [b (first (jdbc/query conn "SELECT name FROM participants WHERE id = ?" [(long id)]
                                      #(jdbc/bytes-col % 1)))]
        {:id id :name (string b)})))

  store/FriendStore
  (-befriend! [_ a b]
    (let [lo (min (long a) (long b)) hi (max (long a) (long b))
          existing #(first (jdbc/query % "SELECT id FROM friendships WHERE lo = ? AND hi = ?" [lo hi]
                                       (fn [rs] (jdbc/long-col rs 1))))]
      (with-conn "befriending"
        ;; read first (a repeated befriend then burns no identity value); a racing insert of the same pair
        ;; waits for the other to commit, then does nothing: read it back
        (if-let [id (existing conn)]
          {:id id :from a :to b :created? false}
          (if-let [id (first (jdbc/query conn (str "INSERT INTO friendships (lo, hi) VALUES (?, ?)"
                                                   " ON CONFLICT (lo, hi) DO NOTHING RETURNING id")
                                         [lo hi] #(jdbc/long-col % 1)))]
            {:id id :from a :to b :created? true}
            (if-let [id (existing conn)]
              {:id id :from a :to b :created? false}
              (throw (ex-info (str "postgres: the friendship of " lo " and " hi " vanished after a conflict")
                              {:type :herald.feed.store.postgres/sql-error}))))))))
  (-friends [_ id]
    (with-conn "reading friends"
      (jdbc/query conn friends-sql [(long id) (long id)]
                  (fn [rs] {:id (jdbc/long-col rs 1) :from id :to (jdbc/long-col rs 2)}))))

  store/Lifecycle
  (-close! [_] (when (.compareAndSet open? true false) (.close ds)) nil)
  (-ready? [_] (and (.get open?) (not (outage/down? reporter)) (.isRunning ds)))
  (-stats [_]
    (let [^HikariPoolMXBean mx (.getHikariPoolMXBean ds)
          pool (if mx
                 {:pool-active (.getActiveConnections mx) :pool-idle (.getIdleConnections mx)
                  :pool-waiting (.getThreadsAwaitingConnection mx)}
                 {})]
      (merge pool
             (try
               (with-conn "reading stats"
                 (first (jdbc/query conn (str "SELECT (SELECT coalesce(max(id), 0) FROM participants),"
                                              " (SELECT coalesce(max(id), 0) FROM friendships)")
                                    [] (fn [rs] {:participants (jdbc/long-col rs 1)
                                                 :friendships (jdbc/long-col rs 2)}))))
               (catch clojure.lang.ExceptionInfo _ {}))))))

(defn open
  "Opens the PostgreSQL graph store: a HikariCP pool, then the schema created or migrated (idempotent; versions
  in herald_schema_version). Every write is a single autocommit statement, durable when it returns (with the
  server's default synchronous_commit).

  | key                    | type   | default                                   | meaning                        |
  |------------------------|--------|-------------------------------------------|--------------------------------|
  | :jdbc-url              | string | \"jdbc:postgresql://127.0.0.1:5432/herald\" | the database (pgjdbc URL)      |
  | :user                  | string | \"herald\"                                  | login role                     |
  | :password              | string | \"\"                                        | its password                   |
  | :schema                | string | \"public\"                                  | the schema holding the tables (created if missing; [a-z_][a-z0-9_]*) |
  | :pool-size             | int    | 10                                        | most pooled connections, 1..1000 |
  | :connection-timeout-ms | int    | 5000                                      | longest wait for a connection (then :herald.feed.store/unavailable) |
  | :statement-timeout-ms  | int    | 10000                                     | PostgreSQL statement_timeout (0: none) |
  | :max-lifetime-ms       | int    | 1800000                                   | a pooled connection's longest life |

  A bad option throws ex-info {:type :herald.feed.store/invalid :key k}. A server that cannot be reached throws
  ex-info {:type :herald.feed.store/unavailable}; other driver errors {:type :herald.feed.store.postgres/sql-error};
  both carry :sql-state. Calls after close throw {:type :herald.feed.store/closed}. An outage is logged by
  herald.feed.outage (a line when the server goes down, a summary every 10 s, a line when it is back), and the
  store is not ready (-ready? false) from a failed call to the next successful one. An unknown option is an error."
  [config]
  (let [opts (jdbc/validate (merge jdbc/defaults config))
        ds (jdbc/pool opts)
        st (PostgresStore. ds (AtomicBoolean. true)
                           (outage/reporter (str "postgres " (first (.split ^String (:jdbc-url opts) "\\?"))) {}))]
    (try
      (with-open [conn (.getConnection ds)] (schema/migrate! conn (:schema opts)))
      st
      (catch Throwable t
        (.close ds)
        (throw (if (instance? java.sql.SQLException t)
                 (jdbc/error (str "opening the schema at " (first (.split ^String (:jdbc-url opts) "\\?"))) t)
                 t))))))
