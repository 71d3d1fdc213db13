(ns herald.feed.store.postgres
  "Participants and friendships on PostgreSQL (plain JDBC over a HikariCP pool): the :scale store's :graph role."
  (:require [clojure.edn :as edn]
            [herald.feed.quiet]
            [herald.feed.outage :as outage]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.lifecycle :as lifecycle]
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
  [reporter ^long ep what e]
  (let [x (jdbc/error what e)]
    (if (= :herald.feed.store/unavailable (:type (ex-data x)))
      (do (outage/failed! reporter x ep)
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
     (let [ep# (outage/epoch ~'reporter)]
       (try
         (let [r# (with-open [~(with-meta 'conn {:tag `Connection}) (.getConnection ~(with-meta 'ds {:tag `HikariDataSource}))]
                    ~@body)]
           (outage/ok! ~'reporter ep#)
           r#)
         (catch java.sql.SQLException e#
           (throw (failure ~'reporter ep# ~what e#)))))))

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(defn- string ^String [^bytes b] (String. b StandardCharsets/UTF_8))

(def ^:private friends-sql
  "SELECT id, hi FROM friendships WHERE lo = ? UNION ALL SELECT id, lo FROM friendships WHERE hi = ? ORDER BY 2")

(def ^:private befriend-sql
  "A befriend in one round trip (jdbc/query-each): the pair's advisory lock (as -block! takes it), the friendship
  inserted unless a block between the pair (either direction) or the friendship exists (a repeat burns no
  identity value), then the blocker (nil when none) and the pair's friendship id, read after the lock. Its
  parameters: the lock's two keys, lo hi, then lo hi hi lo lo hi (the block both ways, the pair) twice."
  (str "SELECT pg_advisory_xact_lock(?, ?);"
       " INSERT INTO friendships (lo, hi) SELECT ?, ?"
       " WHERE NOT EXISTS (SELECT 1 FROM blocks WHERE (blocker = ? AND target = ?) OR (blocker = ? AND target = ?))"
       " AND NOT EXISTS (SELECT 1 FROM friendships WHERE lo = ? AND hi = ?) RETURNING id;"
       " SELECT (SELECT blocker FROM blocks WHERE (blocker = ? AND target = ?) OR (blocker = ? AND target = ?) LIMIT 1),"
       " (SELECT id FROM friendships WHERE lo = ? AND hi = ?)"))

(def ^:private hidden-sql
  "The participants whose posts a participant's inbound feed hides: muted, blocked, or blocking it."
  (str "SELECT target FROM mutes WHERE muter = ? UNION SELECT target FROM blocks WHERE blocker = ?"
       " UNION SELECT blocker FROM blocks WHERE target = ?"))

(def ^:private pair-lock-class
  "The first key of the transaction-level advisory locks of friend pairs (the two-key space, apart from the
  schema lock's one-key space)."
  1181)

(defn- lock-pair!
  "Takes the transaction's advisory lock of the pair lo, hi (a hash: a collision only serializes two pairs)."
  [conn lo hi]
  (jdbc/query conn "SELECT pg_advisory_xact_lock(?, ?)" [(int pair-lock-class) (int (hash [lo hi]))] (constantly nil)))

(defmacro ^:private in-tx
  "Runs body in a transaction on conn: committed when it returns, rolled back when it throws."
  [conn & body]
  `(let [c# ~(with-meta conn {:tag `Connection})]
     (.setAutoCommit c# false)
     (try
       (let [r# (do ~@body)] (.commit c#) r#)
       (catch Throwable t# (try (.rollback c#) (catch java.sql.SQLException _# nil)) (throw t#))
       (finally (.setAutoCommit c# true)))))

(def ^:private reserve-sql
  "Inserts a key record unless a live one (not expired at the last parameter) holds the key; returns it when written."
  (str "INSERT INTO idempotency_keys (participant, key, fingerprint, post, expires_at) VALUES (?, ?, ?, ?, ?)"
       " ON CONFLICT (participant, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, post = EXCLUDED.post,"
       " expires_at = EXCLUDED.expires_at WHERE idempotency_keys.expires_at <= ? RETURNING 1"))

(defn- edn-bytes ^bytes [x]
  (utf8 (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false] (pr-str x))))

(defn- key-row [^java.sql.ResultSet rs]
  {:fingerprint (.getString rs 1) :post (edn/read-string (string (jdbc/bytes-col rs 2))) :expires-at (jdbc/long-col rs 3)})

(deftype PostgresStore [^HikariDataSource ds ^AtomicBoolean open? reporter]
  graph/ParticipantStore
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

  graph/FriendStore
  (-befriend! [_ a b]
    (let [lo (min (long a) (long b)) hi (max (long a) (long b))]
      (with-conn "befriending"
        ;; under the pair's lock, as -block!: a block and a befriend are serialized; one round trip where a
        ;; transaction of four statements took four (bench/results/feed-scale.md, session 12)
        (let [check [lo hi hi lo lo hi]
              [_ inserted [[blocker existing]]]
              (jdbc/query-each conn befriend-sql (into [(int pair-lock-class) (int (hash [lo hi])) lo hi] cat [check check])
                               [(constantly nil) #(jdbc/long-col % 1)
                                (fn [^java.sql.ResultSet rs] [(.getObject rs 1) (.getObject rs 2)])])]
          (cond (seq inserted) {:id (first inserted) :from a :to b :created? true}
                blocker (throw (ex-info (str "participant " blocker " blocks participant " (if (= (long blocker) lo) hi lo))
                                        {:type :herald.feed.store/blocked :blocker (long blocker)
                                         :blocked (if (= (long blocker) lo) hi lo)}))
                :else {:id (long existing) :from a :to b :created? false})))))
  (-friends [_ id]
    (with-conn "reading friends"
      (jdbc/query conn friends-sql [(long id) (long id)]
                  (fn [rs] {:id (jdbc/long-col rs 1) :from id :to (jdbc/long-col rs 2)}))))

  graph/Relations
  (-unfriend! [_ a b]
    (with-conn "unfriending"
      (seq (jdbc/query conn "DELETE FROM friendships WHERE lo = ? AND hi = ? RETURNING id"
                       [(min (long a) (long b)) (max (long a) (long b))] #(jdbc/long-col % 1)))))
  (-mute! [_ a b]
    (with-conn "muting"
      {:from a :target b
       :created? (some? (seq (jdbc/query conn "INSERT INTO mutes (muter, target) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING 1"
                                         [(long a) (long b)] #(jdbc/long-col % 1))))}))
  (-unmute! [_ a b]
    (with-conn "unmuting"
      (some? (seq (jdbc/query conn "DELETE FROM mutes WHERE muter = ? AND target = ? RETURNING 1" [(long a) (long b)]
                              #(jdbc/long-col % 1))))))
  (-mutes [_ id]
    (with-conn "reading mutes"
      (jdbc/query conn "SELECT target FROM mutes WHERE muter = ? ORDER BY target" [(long id)] #(jdbc/long-col % 1))))
  (-block! [_ a b]
    (let [lo (min (long a) (long b)) hi (max (long a) (long b))]
      (with-conn "blocking"
        (in-tx conn
          (lock-pair! conn lo hi)
          (let [created? (some? (seq (jdbc/query conn (str "INSERT INTO blocks (blocker, target) VALUES (?, ?)"
                                                           " ON CONFLICT DO NOTHING RETURNING 1")
                                                 [(long a) (long b)] #(jdbc/long-col % 1))))]
            (jdbc/query conn "DELETE FROM friendships WHERE lo = ? AND hi = ? RETURNING id" [lo hi] #(jdbc/long-col % 1))
            {:from a :target b :created? created?})))))
  (-unblock! [_ a b]
    (with-conn "unblocking"
      (some? (seq (jdbc/query conn "DELETE FROM blocks WHERE blocker = ? AND target = ? RETURNING 1" [(long a) (long b)]
                              #(jdbc/long-col % 1))))))
  (-blocks [_ id]
    (with-conn "reading blocks"
      (jdbc/query conn "SELECT target FROM blocks WHERE blocker = ? ORDER BY target" [(long id)] #(jdbc/long-col % 1))))
  (-hidden [_ id]
    (with-conn "reading the hidden set"
      (set (jdbc/query conn hidden-sql [(long id) (long id) (long id)] #(jdbc/long-col % 1)))))

  keys/KeyReservations
  ;; the insert is atomic per key (a concurrent one waits on the row, then sees it); when it wrote nothing, the
  ;; winner is read by a second statement, whose snapshot holds every committed row
  (-reserve-key! [_ {:keys [owner key fingerprint post expires-at now]}]
    (with-conn "reserving an idempotency key"
      (if (seq (jdbc/query conn reserve-sql [(long owner) key fingerprint (edn-bytes post) (long expires-at) (long now)]
                           #(jdbc/long-col % 1)))
        {:post post :fingerprint fingerprint :expires-at expires-at :created? true}
        (assoc (first (jdbc/query conn "SELECT fingerprint, post, expires_at FROM idempotency_keys WHERE participant = ? AND key = ?"
                                  [(long owner) key] key-row))
               :created? false))))
  (-purge-reservations! [_ now]
    (with-conn "purging idempotency keys"
      (with-open [ps (.prepareStatement conn "DELETE FROM idempotency_keys WHERE expires_at <= ?")]
        (.setLong ps 1 (long now))
        (.executeUpdate ps))))

  lifecycle/Lifecycle
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
