(ns herald.feed.fanout
  "The fan-out role: a post's durable record and its background work (inbound copies, indexing), off the request path, run by the herald.flow jobs of herald.feed.jobs: in-process over the store's log (herald.feed.jobs.posts/flow-fanout) or on Kafka Streams over the Kafka log (herald.feed.events/kafka-fanout).")

(set! *warn-on-reflection* true)

(defprotocol Fanout
  "Records published posts durably and runs their background work ({:post post :recipients [ids]}: deliver to
  every recipient's inbound feed, index) asynchronously, at least once: a write that throws is retried with
  backoff; what still fails stays in the durable record (the store's pending fan-out, or the Kafka log past the
  job's committed offsets) and is done again later. The work is idempotent, so a repeat is harmless. Posts may
  be processed in any order and concurrently.
  Guarantee of `-publish!`: once it returns, the post is durable and in its author's outbound feed, and it
  reaches every recipient's inbound feed and the search index eventually, whatever process crashes."
  (-publish! [f post recipients] "Durably records `post` (validated fields, without :id/:ts) for `recipients` and
  hands its background work on; returns the stored post (with :id and :ts).")
  (-submit! [f job] "Hands the background work of an already recorded `job` on (resumed pending fan-outs);
  waits while the queue is full (backpressure).")
  (-await-idle [f timeout-ms] "Blocks until no job is queued or running; true if idle in time.")
  (-stats [f] "{:submitted n :completed n :failed n :pending n :queued n}, and more where the implementation has them (:indexed, :index-failed, :index-queued).")
  (-close! [f timeout-ms] "Stops taking jobs, drains queued ones up to `timeout-ms`; idempotent."))

(defn publish!
  "Durably records `post` for `recipients` and hands its fan-out and indexing on; returns the stored post. See
  `Fanout`."
  [f post recipients]
  (-publish! f post recipients))
(defn submit! "Queues a fan-out job, see `Fanout`." [f job] (-submit! f job))
(defn await-idle "True once `f` has no queued or running job, false after `timeout-ms`." [f timeout-ms] (-await-idle f timeout-ms))
(defn stats "Counters of `f`: :submitted :completed :failed :pending :queued (see `Fanout`)." [f] (-stats f))
(defn close! "Drains and stops `f`, waiting at most `timeout-ms`; idempotent." [f timeout-ms] (-close! f timeout-ms))

(defprotocol PostChanges
  "Edits and deletes of posts through the event log, for a Fanout whose log is outside the store (Kafka): the
  change is appended after the post's own record (same key, the sender) and the jobs apply it to the inbound
  copies and the index; the author's outbound copy changes before the call returns (read-your-writes). A
  Fanout without it (the local log) leaves edits and deletes to the store's PostEdits role, which applies them
  to every copy and the index itself."
  (-edit-post! [f post changes] "Edits stored post `post` (its current version) with `changes`; returns the edited post.")
  (-delete-post! [f post] "Deletes stored post `post`; returns it."))

(defn edit-post!
  "Edits `post` (as stored) with `changes` ({:subject :story}, either or both) through `f` when it has
  `PostChanges`, else through the store's PostEdits (herald.feed.store/edit-post!). Returns the edited post, or
  nil when it is gone."
  [f store post changes]
  (if (satisfies? PostChanges f)
    (-edit-post! f post changes)
    ((requiring-resolve 'herald.feed.store/edit-post!) store (:id post) changes)))

(defn delete-post!
  "Deletes `post` (as stored) through `f` when it has `PostChanges`, else through the store's PostEdits
  (herald.feed.store/delete-post!). Returns the deleted post, or nil when it was gone already."
  [f store post]
  (if (satisfies? PostChanges f)
    (-delete-post! f post)
    ((requiring-resolve 'herald.feed.store/delete-post!) store (:id post))))

(defprotocol KeyedFanout
  "Publishing under an idempotency key (issue 10, herald.feed.store.keys): the first call with a key records the
  post and its key record durably (in one atomic write on the local log; reserved in the graph role before the
  Kafka append on the Kafka log); a later call with the key while it lives records no second post: when the record's
  fingerprint is the call's, it makes sure the post is recorded and in its author's outbound feed (it appends the
  same post again when the store has no copy of it: the log's readers upsert by post id), and returns the record.
  A record with another fingerprint is returned as it is, nothing done (the caller answers 422)."
  (-publish-keyed! [f post recipients k] "The key record {:post :fingerprint :expires-at :created?} of key request
  `k` (see herald.feed.store.keys), after `post` (validated fields) was recorded for `recipients` under it."))

(defn keys-unsupported
  "The ex-info :herald.feed/not-implemented (a 501 naming the header) of a fan-out or store that cannot keep keys."
  []
  (ex-info "'Idempotency-Key' is not supported by this deployment's store: send the post without it"
           {:type :herald.feed/not-implemented :field "Idempotency-Key"}))

(defn publish-keyed!
  "Publishes `post` under the key request `k` when `f` has `KeyedFanout`; returns the key record. Throws
  `keys-unsupported` when neither `f` nor its store can keep keys."
  [f post recipients k]
  (if (satisfies? KeyedFanout f)
    (-publish-keyed! f post recipients k)
    (throw (keys-unsupported))))
