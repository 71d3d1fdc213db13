(ns herald.feed.store.feeds
  "The feeds role: outbound and inbound feeds, the fan-out, edits and deletes of posts. Its contract, one protocol
  per capability (a backend playing the role implements OutboundStore and InboundStore, and the others it can),
  then the functions callers use on a store: each validates its arguments and calls the capability the role has
  (a batch fan-out, copies derived from a log). Edits and deletes, which the search role follows, are
  herald.feed.store/edit-post! and delete-post!."
  (:require [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.search :as search]
            [herald.feed.store.validate :as v]))

(set! *warn-on-reflection* true)

;; A post map is
;;   {:id <post id> :from <sender id> :occurred "yyyy-MM-dd" :subject s :story s :ts <epoch micros>}
;; where :ts is the server time, strictly increasing per store (also across restarts, clock permitting).
;; A page is {:items [...] :next <opaque cursor string, or nil when there is nothing older>}.

(defprotocol OutboundStore
  "Posts as written by their sender. Guarantees: -publish! assigns :id and :ts, and stores the post and,
  when there are recipients, a pending fan-out record (post + recipients) in ONE atomic, durable write: a
  crash after the return can always finish the fan-out (see InboundStore). Feeds read newest first."
  (-publish! [s post recipients] "Stores post (without :id/:ts), returns it with :id and :ts.")
  (-outbound [s sender opts] "A page of the sender's posts, newest first; opts {:limit n :before cursor}.")
  (-post [s id] "The post with this id, or nil."))

(defprotocol InboundStore
  "Each participant's inbound feed and the fan-out bookkeeping. Guarantees: delivery is an idempotent
  upsert keyed by (recipient, post ts, post id), so at-least-once delivery never shows a duplicate;
  -fan-out! delivers to every recipient and completes the post's fan-out record in one atomic write where
  the backend can; -pending-fanouts lists every published fan-out not yet completed (durably)."
  (-deliver! [s recipient post] "Puts post into recipient's inbound feed (idempotent).")
  (-fan-out! [s post recipients] "Delivers post to every recipient, then completes its fan-out record.")
  (-inbound [s recipient opts] "A page of the recipient's inbound feed, newest first; opts {:limit :before}.")
  (-pending-fanouts [s] "A seq of {:post post :recipients [ids]} not yet completed, oldest first.")
  (-complete-fanout! [s post-id] "Marks the fan-out of post-id done (idempotent)."))

(defprotocol BatchFanOut
  "The feeds role's batch fan-out, an optional capability besides `InboundStore`: the fan-out of many posts
  in one durable write. A store that has it lets the fan-out job write each batch at once (the embedded
  store: one RocksDB WriteBatch, one WAL append, instead of one per post). Same guarantees as `-fan-out!`
  on each post: idempotent, every recipient's inbound upsert and the completion of the post's fan-out
  record in the same atomic write. When it throws, none or some posts may be done; the caller then retries
  post by post (idempotent)."
  (-fan-out-all! [s deliveries] "Delivers every `{:post stored-post :recipients [ids]}` of `deliveries` (a
  non-empty vector) and completes their fan-out records, in one atomic durable write where the store can."))

(defprotocol LoggedFeeds
  "The feeds role when the record of posts is a log outside the store (Kafka in the :scale profile,
  docs/adr/0012-feed-on-kafka.md): the store holds copies derived from the log, written only by idempotent
  upserts keyed by (owner, post ts, post id), so that a record read twice (at-least-once delivery, a replay
  after a crash or a rebalance) never shows a duplicate. No pending fan-out record is kept: the log's
  committed consumer offsets are the progress. Durable on return."
  (-put-outbound! [s post] "Upserts the author's copy of post (with its :id and :ts): its outbound feed and `-post`.")
  (-deliver-all! [s deliveries] "For each {:post :recipients} of deliveries (a non-empty vector): the author's
  outbound copy (not when the delivery has `:author-copied? true`: written already, or owed by the caller) and
  every recipient's inbound copy. Throws when any write failed (none or some may be done)."))

(defprotocol PostEdits
  "The feeds role's edits and deletes of a post (issue 11). Guarantees: durable and atomic on return; an
  edit keeps the post's :id, :ts and :from (its place in every feed) and replaces :subject and/or :story in
  the author's outbound copy and in every inbound copy (at once where inbound copies are references to the
  outbound one, as in the memory and embedded stores); a delete removes the outbound copy and leaves a
  tombstone in the same atomic write, so that every inbound copy, including one a fan-out in flight delivers
  after the delete, is never shown again, and the post is never indexed again. A store that has both the
  feeds and the search role (memory, embedded) makes the search index follow before it returns (an acknowledged
  edit or delete is found again on the next open when the index had not committed it)."
  (-edit-post! [s id changes] "Applies `changes` ({:subject s :story s}, either or both) to post `id`; returns
  the edited post, or nil when there is none (never was, or deleted).")
  (-delete-post! [s id] "Deletes post `id` (outbound, inbound copies, index) leaving a tombstone; returns the
  deleted post as it was, or nil when there is none."))

(defprotocol LoggedEdits
  "The feeds role's edits and deletes when the record of posts is a log outside the store (Kafka, see
  LoggedFeeds): the author's copy changes before the answer (an edit through -put-outbound!, a delete through
  -delete-outbound!), then the fan-out job applies the log's change records to every copy in log order. The
  store records, when it delivers a post, the recipients it delivered to, and a delete leaves a tombstone: a
  delivery of a deleted post (a replay) is skipped. Idempotent; durable on return."
  (-delete-outbound! [s post] "Removes the author's copy of `post` (and `-post` of it) and records its tombstone.")
  (-apply-changes! [s changes] "Applies each `{:edit post}` (the post's new version) or `{:delete post}` of
  `changes` (a non-empty vector, in log order) to the author's copy and every inbound copy delivered."))

;; ---------------------------------------------------------------------------------------------------
;; the feeds role's functions on a store (herald.feed.store.lifecycle/role-map)

(defn new-post
  "The validated fields of a post to publish, {:from :occurred :subject :story} (as `publish!` takes them);
  throws ex-info {:type :herald.feed.store/invalid :key k} naming a bad one."
  [post]
  (select-keys (v/check-post post) [:from :occurred :subject :story]))

(defn publish!
  "Stores post {:from :occurred :subject :story} (strings; :id/:ts are assigned) with a pending fan-out
  record for recipients (a seq of ids, usually the sender's friends), atomically and durably. Returns the
  post with :id and :ts. Finish with fan-out! (or deliver! + complete-fanout!) and
  herald.feed.store.search/index!."
  [s post recipients]
  (let [f (lc/role s :feeds)
        post (new-post post)
        recipients (v/check-recipients recipients)]
    (if-let [p (lc/progress-of s)]
      (search/-tracked-publish! p #(-publish! f post recipients))
      (-publish! f post recipients))))

(defn post
  "The post with this id, or nil."
  [s id]
  (-post (lc/role s :feeds) (v/check-id :id id)))

(defn outbound
  "A page {:items [post ...] :next cursor} of sender's posts, newest first.

  | key      | type   | default | meaning                                               |
  |----------|--------|---------|-------------------------------------------------------|
  | :limit   | int    | 50      | items per page, 1..10000                              |
  | :before  | string | nil     | the :next cursor of the previous page (opaque)         |

  A malformed cursor throws ex-info {:type :herald.feed.store/bad-cursor}."
  ([s sender] (outbound s sender nil))
  ([s sender opts] (-outbound (lc/role s :feeds) (v/check-id :sender sender) (v/page-opts opts))))

(defn inbound
  "A page {:items [post ...] :next cursor} of recipient's inbound feed, newest first. Options as outbound."
  ([s recipient] (inbound s recipient nil))
  ([s recipient opts] (-inbound (lc/role s :feeds) (v/check-id :recipient recipient) (v/page-opts opts))))

(defn logged-feeds?
  "True when `s` has the `LoggedFeeds` role (the feeds can be derived from a log outside the store)."
  [s]
  (satisfies? LoggedFeeds (lc/feeds-of s)))

(defn put-outbound!
  "Upserts the author's copy of `post` (as assigned by a log: with :id and :ts), see `LoggedFeeds`. Idempotent."
  [s post]
  (-put-outbound! (lc/role s :feeds) (v/check-stored-post post))
  nil)

(defn deliver-all!
  "Upserts, for each {:post :recipients} of `deliveries`, the author's outbound copy (unless `:author-copied?
  true`) and every recipient's inbound copy (see `LoggedFeeds`). Idempotent; throws when a write failed."
  [s deliveries]
  (let [ds (v/check-deliveries deliveries)]
    (when (seq ds) (-deliver-all! (lc/role s :feeds) ds))
    nil))

(defn deliver!
  "Puts post (as returned by publish!) into recipient's inbound feed. Idempotent."
  [s recipient post]
  (-deliver! (lc/role s :feeds) (v/check-id :recipient recipient) (v/check-stored-post post)))

(defn fan-out!
  "Delivers post to every recipient and completes its fan-out record (one atomic write in the embedded
  backend). Idempotent: running it twice, or after a crash, never duplicates an inbound item."
  [s post recipients]
  (-fan-out! (lc/role s :feeds) (v/check-stored-post post) (v/check-recipients recipients)))

(defn batch-fan-out?
  "True when the feeds role of `store` has the `BatchFanOut` capability (herald.feed.store.feeds)."
  [store]
  (satisfies? BatchFanOut (lc/feeds-of store)))

(defn fan-out-all!
  "Delivers and completes the fan-out of every `{:post :recipients}` of `deliveries` (feeds role): in one durable
  write when the role has `BatchFanOut`, else post by post. When it throws, none or some posts may be done; the
  caller retries post by post (idempotent)."
  [s deliveries]
  (let [f (lc/role s :feeds)
        ds (v/check-deliveries deliveries)]
    (cond (empty? ds) nil
          (satisfies? BatchFanOut f) (-fan-out-all! f ds)
          :else (doseq [{:keys [post recipients]} ds] (-fan-out! f post recipients)))
    nil))

(defn pending-fanouts
  "The fan-outs published but not completed: a seq of {:post :recipients}, oldest first. After a restart
  the service runs fan-out! on each."
  [s]
  (-pending-fanouts (lc/role s :feeds)))

(defn complete-fanout!
  "Marks the fan-out of post-id as done. Idempotent."
  [s post-id]
  (-complete-fanout! (lc/role s :feeds) (v/check-id :post-id post-id)))

(defn logged-edits?
  "True when the feeds role of `s` has `LoggedEdits`."
  [s]
  (satisfies? LoggedEdits (lc/feeds-of s)))

(defn delete-outbound!
  "Feeds role (`LoggedEdits`): removes the author's copy of `post` (as stored) and records its tombstone."
  [s post]
  (-delete-outbound! (lc/role s :feeds) (v/check-stored-post post))
  nil)

(defn apply-changes!
  "Feeds role (`LoggedEdits`): applies the change records `changes` (`{:edit post}` or `{:delete post}`, posts as
  stored, in log order) to every copy. Idempotent."
  [s changes]
  (let [cs (mapv (fn [c]
                   (cond (:edit c) {:edit (v/check-stored-post (:edit c))}
                         (:delete c) {:delete (v/check-stored-post (:delete c))}
                         :else (v/invalid (str "a change must be {:edit post} or {:delete post}, got " (pr-str c)) :changes c)))
                 changes)]
    (when (seq cs) (-apply-changes! (lc/role s :feeds) cs))
    nil))
