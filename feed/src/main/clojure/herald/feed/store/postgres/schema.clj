(ns herald.feed.store.postgres.schema
  "The PostgreSQL backend's schema as numbered migrations, applied once each under an advisory lock and
  recorded in herald_schema_version (so concurrent opens and reopens are safe)."
  (:require [herald.feed.store.postgres.jdbc :as jdbc])
  (:import (java.sql Connection)))

(set! *warn-on-reflection* true)

(def migrations
  "[version [sql ...]] in order. Never edit an applied one: add the next."
  [[1 [;; the name as UTF-8 bytes: PostgreSQL text cannot hold U+0000, which a participant's name may
       "CREATE TABLE participants (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          name bytea NOT NULL)"
       ;; one row per unordered pair: lo < hi; the unique constraint makes befriend idempotent
       "CREATE TABLE friendships (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          lo bigint NOT NULL,
          hi bigint NOT NULL,
          CONSTRAINT friendships_pair UNIQUE (lo, hi),
          CONSTRAINT friendships_ordered CHECK (lo < hi))"
       "CREATE INDEX friendships_by_hi ON friendships (hi, lo)"]]
   ;; issue 11: directed mutes and blocks (an unfriend deletes the friendships row; identity ids are never reused)
   [2 ["CREATE TABLE mutes (
          muter bigint NOT NULL,
          target bigint NOT NULL,
          PRIMARY KEY (muter, target),
          CONSTRAINT mutes_not_self CHECK (muter <> target))"
       "CREATE TABLE blocks (
          blocker bigint NOT NULL,
          target bigint NOT NULL,
          PRIMARY KEY (blocker, target),
          CONSTRAINT blocks_not_self CHECK (blocker <> target))"
       "CREATE INDEX blocks_by_target ON blocks (target, blocker)"]]
   ;; issue 10: idempotency keys of posts on the Kafka log (herald.feed.store.keys/KeyReservations); the post as
   ;; EDN text in UTF-8 (a subject may hold U+0000, which text cannot)
   [3 ["CREATE TABLE idempotency_keys (
          participant bigint NOT NULL,
          key text NOT NULL,
          fingerprint text NOT NULL,
          post bytea NOT NULL,
          expires_at bigint NOT NULL,
          PRIMARY KEY (participant, key))"
       "CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at)"]]])

(def ^:private lock-key
  "The advisory lock taken while migrating (any constant shared by every herald process)."
  4815162342)

(defn latest
  "The schema version this code writes."
  ^long []
  (long (first (peek migrations))))

(defn migrate!
  "Creates the schema if needed and applies the migrations not yet recorded, in one transaction. Returns the
  version. Throws ex-info :herald.feed.store.postgres/schema-too-new when the database is newer than this code."
  [^Connection conn schema]
  (.setAutoCommit conn false)
  (try
    (jdbc/query conn "SELECT pg_advisory_xact_lock(?)" [lock-key] (constantly nil))
    (jdbc/execute! conn (str "CREATE SCHEMA IF NOT EXISTS " schema))
    (jdbc/execute! conn "CREATE TABLE IF NOT EXISTS herald_schema_version (
                           version int PRIMARY KEY,
                           applied_at timestamptz NOT NULL DEFAULT now())")
    (let [current (first (jdbc/query conn "SELECT coalesce(max(version), 0) FROM herald_schema_version" []
                                     #(jdbc/long-col % 1)))]
      (when (> (long current) (latest))
        (throw (ex-info (str "the database schema is version " current ", newer than this build's " (latest))
                        {:type :herald.feed.store.postgres/schema-too-new :version current :latest (latest)})))
      (doseq [[v stmts] migrations :when (> (long v) (long current))]
        (run! #(jdbc/execute! conn %) stmts)
        (jdbc/query conn "INSERT INTO herald_schema_version (version) VALUES (?) RETURNING version" [(long v)]
                    (constantly nil)))
      (.commit conn)
      (latest))
    (catch Throwable t (.rollback conn) (throw t))
    (finally (.setAutoCommit conn true))))
