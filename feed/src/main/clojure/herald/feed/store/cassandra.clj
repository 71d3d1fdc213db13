(ns herald.feed.store.cassandra
  "The :feeds role of the :scale store on Cassandra: outbound and inbound feeds, posts by id, pending fan-outs
  and the post log (OutboundStore, InboundStore, LoggedFeeds, herald.feed.store.scale.spi/PostLog, herald.feed.store.feeds/BatchFanOut)."
  (:require [clojure.string :as str]
            [herald.feed.outage :as outage]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.cassandra.batch :as batch]
            [herald.feed.store.cassandra.schema :as schema]
            [herald.feed.store.cassandra.session :as cs]
            [herald.feed.store.clock :as clock]
            [herald.feed.store.cursor :as cursor]
            [herald.feed.store.scale.spi :as spi])
  (:import (com.datastax.oss.driver.api.core CqlSession)
           (com.datastax.oss.driver.api.core.cql BatchStatement BatchableStatement DefaultBatchType PreparedStatement Row)
           (com.datastax.oss.driver.api.core.metadata Node NodeState)
           (java.util Set)
           (java.util.concurrent ConcurrentHashMap)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(set! *warn-on-reflection* true)

(defn- st
  "The bound statement k of the prepared statements ps with args."
  [ps k & args]
  (apply cs/bind ^PreparedStatement (get ps k) args))

(defn- post-row
  "A post from a row of sender, ts, id and the post columns (inbound, or outbound with its partition key)."
  [^Row r]
  {:id (.getLong r "id") :from (.getLong r "sender") :occurred (.getString r "occurred")
   :subject (.getString r "subject") :story (.getString r "story") :ts (.getLong r "ts")})

(defn- pointer [^Row r] {:sender (.getLong r "sender") :ts (.getLong r "ts") :id (.getLong r "id")})

(defn- pointer* [^Row r] {:sender (.getLong r "sender") :ts (.getLong r "ts")})

(defn- bucket-of [^Row r] (.getLong r "bucket"))

(defn- page
  "A page {:items :next} of owner's feed (first-k / after-k statements), limit + 1 rows read to know if more follow."
  [session ps [first-k after-k] owner {:keys [limit before]} row->item]
  (let [n (int (inc (long limit)))
        stmt (if before
               (let [[ts id] (cursor/decode before)] (st ps after-k owner ts id n))
               (st ps first-k owner n))
        items (cs/rows row->item (cs/execute! session "reading a feed" stmt))
        more? (> (count items) (long limit))
        shown (if more? (subvec items 0 limit) items)]
    {:items shown :next (cursor/for-page shown more?)}))

(defn- fetch-posts
  "The posts of pointers [{:sender :ts :id}] read from the outbound feeds, n at a time, in order (missing ones
  dropped)."
  [session ps n pointers]
  (filterv some? (batch/run-bounded! session (mapv (fn [{:keys [sender ts id]}] (st ps :outbound-row sender ts id)) pointers)
                                     n "reading posts" #(first (cs/first-page-rows post-row %)))))

(defn- publish-batch
  "ONE logged batch: the outbound row, the id pointer, the post-log row, the pending fan-out (when there are
  recipients) and the registration of its time buckets unless this instance registered them already (marks:
  {:log AtomicLong :pending AtomicLong}, the last bucket of each kind it registered; its :ts only grow)."
  ^BatchStatement [ps marks post recipients]
  (let [{:keys [id ts from occurred subject story]} post
        lb (schema/log-bucket ts) pb (schema/pending-bucket ts)]
    (BatchStatement/newInstance
     DefaultBatchType/LOGGED
     ^"[Lcom.datastax.oss.driver.api.core.cql.BatchableStatement;"
     (into-array BatchableStatement
                 (cond-> [(st ps :insert-outbound from ts id occurred subject story)
                          (st ps :insert-post id from ts)
                          (st ps :insert-log lb ts id from)]
                   (not= lb (.get ^AtomicLong (:log marks))) (conj (st ps :insert-bucket "log" lb))
                   (seq recipients) (conj (st ps :insert-pending pb ts id from (vec recipients)))
                   (and (seq recipients) (not= pb (.get ^AtomicLong (:pending marks))))
                   (conj (st ps :insert-bucket "pending" pb)))))))

(def ^:private bucket-grace
  "Pending buckets older than this many buckets (minutes) behind the clock, found empty, leave the registry."
  10)

(def ^:private sweep-period-micros
  "How often fan-outs and completions sweep the registry of pending buckets (at most, per instance)."
  60000000)

(defn- sweep-pending-buckets!
  "Drops from the registry the pending buckets older than bucket-grace that hold no pending fan-out any more, so
  that listing the pending fan-outs reads only the recent buckets and those still holding some."
  [session ps]
  (let [horizon (- (schema/pending-bucket (clock/now-micros)) (long bucket-grace))]
    (doseq [b (cs/rows bucket-of (cs/execute! session "listing pending buckets" (st ps :buckets-from "pending" 0)))
            :while (< (long b) horizon)]
      (when (empty? (cs/rows bucket-of (cs/execute! session "sweeping pending buckets" (st ps :pending-any b))))
        (cs/execute! session "dropping an empty pending bucket" (st ps :delete-bucket "pending" b))))))

(defn- maybe-sweep!
  "Runs sweep-pending-buckets! when the last sweep of this instance is older than sweep-period-micros."
  [session ps ^AtomicLong swept]
  (let [now (clock/now-micros) last (.get swept)]
    (when (and (> (- now last) (long sweep-period-micros)) (.compareAndSet swept last now))
      (sweep-pending-buckets! session ps))))

(defn- pending-rows
  "The rows of every registered pending bucket, oldest first."
  [session ps]
  (into [] (mapcat (fn [b]
                     (cs/rows (fn [^Row r] (assoc (pointer r) :recipients (vec (.getList r "recipients" Long))))
                              (cs/execute! session "listing pending fan-outs" (st ps :pending-in b)))))
        (cs/rows bucket-of (cs/execute! session "listing pending fan-outs" (st ps :buckets-from "pending" 0)))))

(defn- posts-after [session ps n ts limit]
  (let [ts (long ts) limit (long limit)
        buckets (cs/rows bucket-of (cs/execute! session "reading the post log"
                                                (st ps :buckets-from "log" (schema/log-bucket (max 0 (inc ts))))))]
    (loop [bs buckets acc []]
      (if (or (empty? bs) (>= (count acc) limit))
        (fetch-posts session ps n acc)
        (let [rows (cs/rows pointer (cs/execute! session "reading the post log"
                                                 (st ps :log-after (first bs) ts (int (- limit (count acc))))))]
          (recur (rest bs) (into acc rows)))))))

(defn- delete-pending [ps id ts]
  (st ps :delete-pending (schema/pending-bucket ts) ts id))

(defn- deleted-ids
  "The ids among `posts` ({:id :ts}) that have a tombstone (issue 11: deleted posts): one single-partition read of
  deleted_by_hour per hour of the posts' :ts (a fan-out flush's posts share one or two), not one partition read per
  id as deleted_posts would take (~12% of the node's CPU in the fan-out's writes, bench/sizing/cassandra-tables.clj)."
  [session ps posts]
  (if (empty? posts)
    #{}
    (into #{} (mapcat (fn [[b ps*]]
                        (cs/rows (fn [^Row r] (.getLong r "id"))
                                 (cs/execute! session "reading tombstones" (st ps :deleted-in-hour b (vec (distinct (map :id ps*))))))))
          (group-by #(schema/log-bucket (:ts %)) posts))))

(defn- fan-out-all!
  "Delivers every {:post :recipients} of deliveries (inbound upserts, :fanout-concurrency in flight across all
  posts), then deletes their pending rows: a failure leaves them pending, to be fanned out again."
  [session ps opts ^Set pending deliveries]
  (let [n (:fanout-concurrency opts)
        ;; issue 11: a deleted post is not delivered; the recipients are recorded for edits and deletes
        gone (deleted-ids session ps (map :post deliveries))]
    (batch/run-bounded! session (vec (for [{{:keys [id ts from occurred subject story]} :post rs :recipients} deliveries
                                           :when (not (gone id))
                                           s (cons (st ps :insert-recipients id (vec rs))
                                                   (for [r rs] (st ps :insert-inbound r ts id from occurred subject story)))]
                                       s))
                        n "fanning out" identity)
    (batch/run-bounded! session (mapv (fn [{{:keys [id ts]} :post}] (delete-pending ps id ts)) deliveries)
                        n "completing fan-outs" identity)
    (doseq [{:keys [post]} deliveries] (.remove pending (:id post)))
    nil))

(defn- version
  "The write timestamp of a post's copies as the Kafka log records them (feeds/LoggedFeeds): an edit's :version
  (herald.feed.events), else the post's :ts (epoch microseconds, as Cassandra's own), so that the newest version of
  a post wins whatever order its writes land in (the post's own fan-out after an edit's author copy, a replay)."
  ^long [post]
  (long (or (:version post) (:ts post))))


(defn- author-copy
  "The statements of a post's author copy: its outbound row and its pointer by id (no post-log row, no pending
  fan-out: with a log outside the store, feeds/LoggedFeeds), written at timestamp `v`."
  [ps {:keys [id ts from occurred subject story]} v]
  [(st ps :insert-outbound-at from ts id occurred subject story v) (st ps :insert-post-at id from ts v)])

(defn- inbound-rows
  "[statement bytes] of the inbound row of `post` for each recipient in rs, written at timestamp `v`."
  [ps {:keys [id ts from occurred subject story] :as post} rs v]
  (let [b (batch/text-bytes post)]
    (for [r rs] [(st ps :insert-inbound-at r ts id from occurred subject story v) b])))

(defn- post-rows
  "[statement bytes] of a post's copies written at timestamp `v`: the author copy and the inbound row of each
  recipient in rs."
  [ps post rs v]
  (let [b (batch/text-bytes post)]
    (concat (map #(vector % b) (author-copy ps post v)) (inbound-rows ps post rs v))))

(defn- delivery-rows
  "[statement bytes] of one delivery: the post's copies (without the author copy when `author-copied?`) and its
  recipients row."
  [ps {:keys [post recipients author-copied?]}]
  (cond->> ((if author-copied? inbound-rows post-rows) ps post recipients (version post))
    (seq recipients) (cons [(st ps :insert-recipients (:id post) (vec recipients)) (+ 64 (* 8 (count recipients)))])))

(defn- deliver-all!
  "Upserts the author copy and every recipient's inbound row of each {:post :recipients} of deliveries, and
  records each post's recipients (for its edits and delete); a post with a tombstone (deleted; this is a replay)
  is skipped. The rows of all the deliveries go in unlogged batches per replica set (batch/write-grouped!),
  :fanout-concurrency requests in flight; throws the first failure once every request has finished."
  [session ps opts deliveries]
  (let [gone (deleted-ids session ps (map :post deliveries))]
    (batch/write-grouped! session (into [] (comp (remove #(gone (:id (:post %)))) (mapcat #(delivery-rows ps %))) deliveries)
                    (:fanout-concurrency opts) "delivering posts"))
  nil)

(defn- recipients-of [session ps id]
  (or (first (cs/rows (fn [^Row r] (vec (.getList r "recipients" Long)))
                      (cs/execute! session "reading a post's recipients" (st ps :recipients id))))
      []))

(defn- delete-author
  "The statements of a delete's author side: the tombstone (in deleted_by_hour, which deliveries read, and in
  deleted_posts, which versions before 2026-11-26 read), the outbound row and the pointer by id."
  [ps {:keys [id ts from]}]
  [(st ps :insert-deleted-hour (schema/log-bucket ts) id from ts) (st ps :insert-deleted id from ts)
   (st ps :delete-outbound from ts id) (st ps :delete-post id)])

(defn- apply-changes!
  "Applies each {:edit post} / {:delete post} of changes in order: an edit upserts the author copy and every
  recorded recipient's inbound row with the new text (skipped once the post has a tombstone), a delete writes the
  tombstone and removes the author copy and every recorded recipient's inbound row."
  [session ps opts changes]
  (let [n (:fanout-concurrency opts)]
    (doseq [{:keys [edit delete]} changes]
      (if edit
        (let [id (:id edit)]
          (when (empty? (deleted-ids session ps [edit]))
            (batch/write-grouped! session (post-rows ps edit (recipients-of session ps id) (clock/edit-version edit)) n "applying an edit")))
        (let [{:keys [id ts]} delete]
          (batch/write-grouped! session (map #(vector % 64)
                                             (concat (delete-author ps delete)
                                                     (for [r (recipients-of session ps id)] (st ps :delete-inbound r ts id))))
                                n "applying a delete"))))
    nil))

(defn- mark!
  "Raises the AtomicLong m to bucket (a registration is never taken back for a later, concurrent one)."
  [^AtomicLong m ^long bucket]
  (.accumulateAndGet m bucket (reify java.util.function.LongBinaryOperator (applyAsLong [_ a b] (max a b)))))

(defn- reported
  "`e` (an ex-info of a call) marked as reported when it says the server is out of reach (::timeout or
  ::unavailable), after telling the outage reporter r (one log line per state change, herald.feed.outage); any
  other error unchanged (a bad statement is not an outage)."
  [r ^long ep ^clojure.lang.ExceptionInfo e]
  (if (#{::timeout ::unavailable} (:type (ex-data e)))
    (do (outage/failed! r e ep)
        (ex-info (ex-message e) (outage/reported (ex-data e) r) (ex-cause e)))
    e))

(defmacro ^:private guarded
  "Runs body when the store is open (else throws :herald.feed.store/closed); driver errors become ex-infos
  (cs/with-errors), outages go to the reporter r, a success tells r the server is back."
  [open? r & body]
  `(if (.get ~(with-meta open? {:tag `AtomicBoolean}))
     (let [ep# (outage/epoch ~r)]
       (try (let [v# (cs/with-errors "a request" ~@body)] (outage/ok! ~r ep#) v#)
            (catch clojure.lang.ExceptionInfo e# (throw (reported ~r ep# e#)))))
     (throw (ex-info "the store is closed" {:type :herald.feed.store/closed}))))

(deftype CassandraFeeds [^CqlSession session ps opts ^AtomicLong last-ts marks ^Set pending ^AtomicLong swept
                         ^AtomicBoolean open? reporter]
  feeds/OutboundStore
  (-publish! [_ post recipients]
    (guarded open? reporter
     (let [ts (clock/tick! last-ts)
           post (assoc post :id (schema/post-id ts (:node-id opts)) :ts ts)
           batch (publish-batch ps marks post recipients)]
       (cs/execute! session "publishing a post" batch)
       (mark! (:log marks) (schema/log-bucket ts))
       (when (seq recipients)
         (mark! (:pending marks) (schema/pending-bucket ts))
         (.add pending (:id post)))
       post)))
  (-outbound [_ sender opts]
    (guarded open? reporter (page session ps [:outbound-first :outbound-after] sender opts post-row)))
  (-post [_ id]
    (guarded open? reporter
     (when-let [p (first (cs/rows pointer* (cs/execute! session "reading a post" (st ps :post-by-id id))))]
       (first (fetch-posts session ps (:fanout-concurrency opts) [(assoc p :id id)])))))

  feeds/InboundStore
  (-deliver! [_ recipient post]
    (guarded open? reporter
     (let [{:keys [id ts from occurred subject story]} post]
       (cs/execute! session "delivering a post" (st ps :insert-inbound recipient ts id from occurred subject story))
       nil)))
  (-fan-out! [_ post recipients]
    (guarded open? reporter (fan-out-all! session ps opts pending [{:post post :recipients recipients}])
             (maybe-sweep! session ps swept)))
  (-inbound [_ recipient opts]
    (guarded open? reporter (page session ps [:inbound-first :inbound-after] recipient opts post-row)))
  (-pending-fanouts [_]
    (guarded open? reporter
     (sweep-pending-buckets! session ps)
     (let [rows (pending-rows session ps)
           posts (into {} (map (juxt :id identity)) (fetch-posts session ps (:fanout-concurrency opts) rows))]
       (vec (for [{:keys [id recipients]} rows :let [p (posts id)] :when p]
              (do (.add pending id) {:post p :recipients recipients}))))))
  (-complete-fanout! [_ post-id]
    (guarded open? reporter
     (let [ts (schema/id-ts post-id)]
       (cs/execute! session "completing a fan-out" (delete-pending ps post-id ts))
       (.remove pending post-id)
       (maybe-sweep! session ps swept)
       nil)))

  feeds/BatchFanOut
  (-fan-out-all! [_ deliveries]
    (guarded open? reporter (fan-out-all! session ps opts pending deliveries) (maybe-sweep! session ps swept)))

  feeds/LoggedFeeds
  (-put-outbound! [_ post]
    (guarded open? reporter (cs/execute! session "storing the author's copy" (batch/unlogged (author-copy ps post (version post)))) nil))
  (-deliver-all! [_ deliveries] (guarded open? reporter (deliver-all! session ps opts deliveries)))

  feeds/LoggedEdits
  (-delete-outbound! [_ post]
    (guarded open? reporter (batch/run-bounded! session (delete-author ps post) 3 "deleting the author's copy" identity) nil))
  (-apply-changes! [_ changes] (guarded open? reporter (apply-changes! session ps opts changes)))

  spi/PostLog
  (-posts-after [_ ts limit] (guarded open? reporter (posts-after session ps (:fanout-concurrency opts) ts limit)))

  lifecycle/Lifecycle
  (-close! [_] (when (.compareAndSet open? true false) (.close session)) nil)
  (-ready? [_]
    (and (.get open?) (not (.isClosed session))
         (boolean (some #(= NodeState/UP (.getState ^Node %)) (.values (.getNodes (.getMetadata session)))))))
  (-stats [_] {:pending-fanouts (.size pending)}))

(defn- stored-last-ts
  "The highest post :ts in the post log (0 when empty): the clock restarts above it."
  ^long [session ps]
  (let [b (first (cs/rows bucket-of (cs/execute! session "reading the last post" (st ps :last-bucket "log"))))]
    (or (when b (first (cs/rows (fn [^Row r] (.getLong r "ts"))
                                (cs/execute! session "reading the last post" (st ps :last-log b)))))
        0)))

(defn- copy-tombstones!
  "Copies the tombstones of deleted_posts into deleted_by_hour when the latter is empty (a keyspace written by a
  version before 2026-11-26, which had only deleted_posts): deliveries read deleted_by_hour only."
  [session ps]
  (when (empty? (cs/rows (fn [^Row r] (.getLong r "id")) (cs/execute! session "reading tombstones" (st ps :deleted-hour-any))))
    (let [rows (cs/rows (fn [^Row r] [(.getLong r "id") (.getLong r "sender") (.getLong r "ts")])
                        (cs/execute! session "reading tombstones" (st ps :deleted-all)))]
      (batch/run-bounded! session (mapv (fn [[id from ts]] (st ps :insert-deleted-hour (schema/log-bucket ts) id from ts)) rows)
                          16 "copying tombstones" identity))))

(defn open
  "Opens the Cassandra :feeds backend: connects, creates the keyspace and tables if missing (CREATE ... IF NOT
  EXISTS) and prepares its statements. Returns an object implementing herald.feed.store's OutboundStore,
  InboundStore and Lifecycle, herald.feed.store.scale.spi/PostLog and herald.feed.store.feeds/BatchFanOut.

  | key                 | type              | default                    | meaning |
  |---------------------|-------------------|----------------------------|---------|
  | :contact-points     | vector of strings | [\"127.0.0.1:9042\"]       | \"host:port\" of one or more nodes (or one comma-separated string) |
  | :local-datacenter   | string            | \"datacenter1\"            | the driver's local datacenter (LOCAL_* consistency, routing) |
  | :keyspace           | string            | \"herald_feed\"            | keyspace of the tables, [a-z][a-z0-9_]{0,47} |
  | :replication        | map               | {\"class\" \"SimpleStrategy\" \"replication_factor\" 1} | replication of a keyspace created on open (an existing one is not altered) |
  | :create-schema?     | boolean           | true                       | create the keyspace and tables if missing |
  | :consistency        | keyword           | :local-quorum              | every read and write: :one :two :three :quorum :local-quorum :each-quorum :all :local-one |
  | :request-timeout-ms | int               | 5000                       | per request (a write that times out may still be applied) |
  | :connect-timeout-ms | int               | 10000                      | connecting and initialising connections |
  | :schema-timeout-ms  | int               | 60000                      | each CREATE and the schema agreement wait |
  | :node-id            | int               | 0                          | 0..1023, in the low bits of every post id: distinct per concurrently running instance |
  | :fanout-concurrency | int               | 64                         | inbound inserts in flight per fan-out! |

  Post ids are (:ts << 10) + :node-id and :ts is strictly increasing per instance, restarting above the
  highest :ts in the post log. Bad options throw ex-info {:type :herald.feed.store/invalid :key k}; driver
  errors ex-info with :type :herald.feed.store.cassandra/timeout, /unavailable, /invalid-query or /error."
  [config]
  (let [opts (cs/validate (merge cs/defaults (select-keys config (keys cs/defaults))))
        session (cs/connect opts)]
    (try
      (when (:create-schema? opts) (schema/create! session opts))
      (let [ps (schema/prepare-all session (:keyspace opts))
            last-ts (stored-last-ts session ps)]
        (copy-tombstones! session ps)
        (CassandraFeeds. session ps opts (AtomicLong. last-ts)
                         {:log (AtomicLong. -1) :pending (AtomicLong. -1)} (ConcurrentHashMap/newKeySet) (AtomicLong. (clock/now-micros)) (AtomicBoolean. true)
                         (outage/reporter (str "cassandra " (str/join "," (:contact-points opts))))))
      (catch Throwable t (.close session) (throw t)))))
