(ns herald.feed.store.cassandra.schema
  "The CQL data model of the :feeds backend: tables (created idempotently), prepared statements, time buckets
  and post ids."
  (:require [herald.feed.store.cassandra.session :as cs])
  (:import (com.datastax.oss.driver.api.core.cql SimpleStatement)
           (java.time Duration)))

(set! *warn-on-reflection* true)

;; Feeds: partition = participant, clustering = time, newest first. The post's columns live in the sender's
;; outbound row; inbound rows copy them (one-partition reads); posts, post_log and pending_fanouts point at the
;; outbound row (sender, ts, id) so that the publish batch carries the post's text once.
(def tables
  "Table name -> CQL column and key definition (the part after CREATE TABLE name)."
  (array-map
   "outbound" "(sender bigint, ts bigint, id bigint, occurred text, subject text, story text,
               PRIMARY KEY ((sender), ts, id)) WITH CLUSTERING ORDER BY (ts DESC, id DESC)"
   "inbound" "(recipient bigint, ts bigint, id bigint, sender bigint, occurred text, subject text, story text,
              PRIMARY KEY ((recipient), ts, id)) WITH CLUSTERING ORDER BY (ts DESC, id DESC)"
   "posts" "(id bigint PRIMARY KEY, sender bigint, ts bigint)"
   "post_log" "(bucket bigint, ts bigint, id bigint, sender bigint, PRIMARY KEY ((bucket), ts, id))
               WITH CLUSTERING ORDER BY (ts ASC, id ASC)"
   ;; a resurrected pending row only repeats an idempotent fan-out: a short gc_grace keeps scans cheap
   "pending_fanouts" "(bucket bigint, ts bigint, id bigint, sender bigint, recipients list<bigint>,
                      PRIMARY KEY ((bucket), ts, id)) WITH CLUSTERING ORDER BY (ts ASC, id ASC)
                      AND gc_grace_seconds = 10800"
   "buckets" "(kind text, bucket bigint, PRIMARY KEY ((kind), bucket)) WITH CLUSTERING ORDER BY (bucket ASC)"
   ;; issue 11: who got a post's inbound copies (written by the fan-out on the Kafka log), so that its edits and
   ;; its delete reach every copy; and the tombstones of deleted posts, so that a replayed delivery is skipped
   "post_recipients" "(id bigint PRIMARY KEY, recipients list<bigint>)"
   "deleted_posts" "(id bigint PRIMARY KEY, sender bigint, ts bigint)"
   ;; the same tombstones by hour of the post's :ts (2026-11-26): a fan-out flush's check is one partition read
   "deleted_by_hour" "(bucket bigint, id bigint, sender bigint, ts bigint, PRIMARY KEY ((bucket), id))"))

(def log-bucket-micros
  "The span of one post_log partition: an hour of post :ts."
  3600000000)

(def pending-bucket-micros
  "The span of one pending_fanouts partition: a minute of post :ts (bounds the tombstones a scan meets)."
  60000000)

(defn log-bucket ^long [^long ts] (quot ts (long log-bucket-micros)))

(defn pending-bucket ^long [^long ts] (quot ts (long pending-bucket-micros)))

(def node-bits
  "Post id = :ts (epoch micros) * 2^node-bits + :node-id."
  10)

(defn post-id
  "The post id for ts issued by node-id: unique while each node's ts are unique, increasing with ts."
  ^long [^long ts ^long node-id]
  (+ (bit-shift-left ts (long node-bits)) node-id))

(defn id-ts
  "The :ts encoded in a post id made by post-id."
  ^long [^long id]
  (bit-shift-right id (long node-bits)))

(defn- ddl [cql timeout-ms]
  (-> (SimpleStatement/newInstance ^String cql) (.setTimeout (Duration/ofMillis (long timeout-ms)))))

(defn create!
  "Creates the keyspace (with :replication; an existing keyspace is left as it is) and then every table, if
  missing (the tables concurrently: the schema refreshes coalesce)."
  [session {:keys [keyspace replication schema-timeout-ms]}]
  (cs/execute! session (str "creating keyspace " keyspace)
               (ddl (str "CREATE KEYSPACE IF NOT EXISTS " keyspace " WITH replication = " (cs/replication-cql replication))
                    schema-timeout-ms))
  (cs/await-all (str "creating the tables of " keyspace)
                (for [[t cql] tables]
                  (cs/execute-async session (ddl (str "CREATE TABLE IF NOT EXISTS " keyspace "." t " " cql)
                                                 schema-timeout-ms)))))

(def ^:private statements
  {:insert-outbound "INSERT INTO %s.outbound (sender, ts, id, occurred, subject, story) VALUES (?, ?, ?, ?, ?, ?)"
   :insert-post "INSERT INTO %s.posts (id, sender, ts) VALUES (?, ?, ?)"
   :insert-log "INSERT INTO %s.post_log (bucket, ts, id, sender) VALUES (?, ?, ?, ?)"
   :insert-pending "INSERT INTO %s.pending_fanouts (bucket, ts, id, sender, recipients) VALUES (?, ?, ?, ?, ?)"
   :insert-bucket "INSERT INTO %s.buckets (kind, bucket) VALUES (?, ?)"
   :insert-inbound "INSERT INTO %s.inbound (recipient, ts, id, sender, occurred, subject, story) VALUES (?, ?, ?, ?, ?, ?, ?)"
   ;; a post's copies as the Kafka log's jobs and the service write them: the write timestamp is the post's version
   ;; (its :ts, an edit's :version), so an older version written later (the fan-out of the post itself running
   ;; after an edit's author copy, a replay) never overwrites a newer one
   :insert-outbound-at "INSERT INTO %s.outbound (sender, ts, id, occurred, subject, story) VALUES (?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
   :insert-post-at "INSERT INTO %s.posts (id, sender, ts) VALUES (?, ?, ?) USING TIMESTAMP ?"
   :insert-inbound-at "INSERT INTO %s.inbound (recipient, ts, id, sender, occurred, subject, story) VALUES (?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
   :outbound-first "SELECT sender, ts, id, occurred, subject, story FROM %s.outbound WHERE sender = ? LIMIT ?"
   :outbound-after "SELECT sender, ts, id, occurred, subject, story FROM %s.outbound WHERE sender = ? AND (ts, id) < (?, ?) LIMIT ?"
   :outbound-row "SELECT sender, ts, id, occurred, subject, story FROM %s.outbound WHERE sender = ? AND ts = ? AND id = ?"
   :inbound-first "SELECT ts, id, sender, occurred, subject, story FROM %s.inbound WHERE recipient = ? LIMIT ?"
   :inbound-after "SELECT ts, id, sender, occurred, subject, story FROM %s.inbound WHERE recipient = ? AND (ts, id) < (?, ?) LIMIT ?"
   :post-by-id "SELECT sender, ts FROM %s.posts WHERE id = ?"
   :log-after "SELECT ts, id, sender FROM %s.post_log WHERE bucket = ? AND ts > ? LIMIT ?"
   :last-log "SELECT ts FROM %s.post_log WHERE bucket = ? ORDER BY ts DESC, id DESC LIMIT 1"
   :buckets-from "SELECT bucket FROM %s.buckets WHERE kind = ? AND bucket >= ?"
   :last-bucket "SELECT bucket FROM %s.buckets WHERE kind = ? ORDER BY bucket DESC LIMIT 1"
   :delete-bucket "DELETE FROM %s.buckets WHERE kind = ? AND bucket = ?"
   :pending-any "SELECT bucket FROM %s.pending_fanouts WHERE bucket = ? LIMIT 1"
   :pending-in "SELECT ts, id, sender, recipients FROM %s.pending_fanouts WHERE bucket = ?"
   :delete-pending "DELETE FROM %s.pending_fanouts WHERE bucket = ? AND ts = ? AND id = ?"
   ;; issue 11: edits and deletes
   :insert-recipients "INSERT INTO %s.post_recipients (id, recipients) VALUES (?, ?)"
   :recipients "SELECT recipients FROM %s.post_recipients WHERE id = ?"
   :insert-deleted "INSERT INTO %s.deleted_posts (id, sender, ts) VALUES (?, ?, ?)"
   :insert-deleted-hour "INSERT INTO %s.deleted_by_hour (bucket, id, sender, ts) VALUES (?, ?, ?, ?)"
   :deleted-in-hour "SELECT id FROM %s.deleted_by_hour WHERE bucket = ? AND id IN ?"
   :deleted-all "SELECT id, sender, ts FROM %s.deleted_posts"
   :deleted-hour-any "SELECT id FROM %s.deleted_by_hour LIMIT 1"
   :delete-outbound "DELETE FROM %s.outbound WHERE sender = ? AND ts = ? AND id = ?"
   :delete-post "DELETE FROM %s.posts WHERE id = ?"
   :delete-inbound "DELETE FROM %s.inbound WHERE recipient = ? AND ts = ? AND id = ?"})

(defn prepare-all
  "Every statement of the backend prepared for keyspace: a map of keyword -> PreparedStatement."
  [session keyspace]
  (into {} (for [[k cql] statements] [k (cs/prepare session (format cql keyspace))])))
