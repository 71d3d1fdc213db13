(ns herald.feed.store
  "The feed's storage contract: one protocol per data role, the store as a plain map of roles
  `{:graph :feeds :search :cache}`, public functions that validate and call the role they name, and open-store."
  (:require [herald.feed.store.cursor :as cursor])
  (:import (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

;; Ids are positive longs. A post map is
;;   {:id <post id> :from <sender id> :occurred "yyyy-MM-dd" :subject s :story s :ts <epoch micros>}
;; where :ts is the server time, strictly increasing per store (also across restarts, clock permitting).
;; A page is {:items [...] :next <opaque cursor string, or nil when there is nothing older>}.

(defprotocol ParticipantStore
  "Participants. Guarantees: ids are unique and increasing (never reused, also across restarts); a
  participant is durable when -create-participant! returns; participants are immutable."
  (-create-participant! [s name] "Stores a new participant, returns {:id :name}.")
  (-participant [s id] "Returns {:id :name} or nil."))

(defprotocol FriendStore
  "The social graph. Guarantees: a friendship is symmetric and stored once with one id (listed from both
  sides); -befriend! is idempotent and linearizable per pair, also under concurrent calls (a second call,
  or a racing one, returns the existing friendship with :created? false); durable on return. The store
  does not check that the participants exist (the service does)."
  (-befriend! [s a b] "Befriends a and b (a != b), returns {:id :from a :to b :created? bool}.")
  (-friends [s id] "Returns [{:id :from id :to other}] ordered by the other participant's id."))

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

(declare feeds-of)

(defn batch-fan-out?
  "True when the feeds role of `store` has the `BatchFanOut` capability."
  [store]
  (satisfies? BatchFanOut (feeds-of store)))

(defprotocol LoggedFeeds
  "The feeds role when the record of posts is a log outside the store (Kafka in the :scale profile,
  docs/adr/0012-feed-on-kafka.md): the store holds copies derived from the log, written only by idempotent
  upserts keyed by (owner, post ts, post id), so that a record read twice (at-least-once delivery, a replay
  after a crash or a rebalance) never shows a duplicate. No pending fan-out record is kept: the log's
  committed consumer offsets are the progress. Durable on return."
  (-put-outbound! [s post] "Upserts the author's copy of post (with its :id and :ts): its outbound feed and `-post`.")
  (-deliver-all! [s deliveries] "For each {:post :recipients} of deliveries (a non-empty vector): the author's
  outbound copy and every recipient's inbound copy. Throws when any write failed (none or some may be done)."))

(defprotocol SearchIndex
  "Keyword search over subject and story. Guarantees: -index! is idempotent by post id; visibility is
  near-real-time: a post indexed at least the backend's lag before -search is called is found by it (the
  memory store and an embedded store opened with :search-max-lag-ms 0 are read-your-writes; the embedded
  default lag is 1 s); the index is derived data: an embedded backend catches up on open with every
  published post not yet committed to the index, so callers never need to re-index after a crash. Terms are Unicode words (Lucene's StandardAnalyzer: UAX#29 word
  boundaries, lower-cased); a post matches when EVERY keyword term occurs in its subject or story."
  (-index! [s post] "Makes post searchable (idempotent by :id).")
  (-index-batch! [s posts] "Makes every post of posts searchable (idempotent by :id), as -index! on each.")
  (-search [s keywords opts] "Sender ids of matching posts, one per post (repeats kept), newest first; opts {:limit n}.")
  (-refresh-search! [s] "Makes every post indexed before the call visible to the next searches."))

(defprotocol Cache
  "A bounded cache of derived values (participant lookups, friend lists). Guarantees: -fetch returns the
  cached value or loads, caches and returns it (nil is not cached); -invalidate! waits for an in-flight
  load of the key, so a value loaded before a write is never served after the write's invalidation."
  (-fetch [c k load] "The value for k, calling (load) on a miss.")
  (-invalidate! [c k] "Drops k.")
  (-cache-stats [c] "A map of counters: :hits :misses :evictions :size."))

(defprotocol Lifecycle
  "Opening state and closing. -close! flushes and releases everything and is idempotent; a durable
  backend's calls after close throw ex-info of :type :herald.feed.store/closed."
  (-close! [s] "Flushes, commits and closes.")
  (-ready? [s] "True while the store is open and usable (false while its search index is failing).")
  (-stats [s] "A flat map of numbers (keyword -> number) for metrics: counters (see counter-stats) and gauges."))

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

(defprotocol SearchEdits
  "The search role's side of edits and deletes: a post's document replaced or removed. Idempotent by post
  id; visible within the backend's lag, like -index!."
  (-reindex! [s post] "Replaces the document of (:id post) by post's (adds it when absent).")
  (-unindex! [s id] "Removes the document of post `id` (nothing when absent)."))

(defprotocol LoggedEdits
  "The feeds role's edits and deletes when the record of posts is a log outside the store (Kafka, see
  LoggedFeeds): the author's copy changes before the answer (an edit through -put-outbound!, a delete through
  -delete-outbound!), then the fan-out job applies the log's change records to every copy in log order. The
  store records, when it delivers a post, the recipients it delivered to, and a delete leaves a tombstone: a
  delivery of a deleted post (a replay) is skipped. Idempotent; durable on return."
  (-delete-outbound! [s post] "Removes the author's copy of `post` (and `-post` of it) and records its tombstone.")
  (-apply-changes! [s changes] "Applies each `{:edit post}` (the post's new version) or `{:delete post}` of
  `changes` (a non-empty vector, in log order) to the author's copy and every inbound copy delivered."))

(defprotocol SearchProgress
  "The search role's bookkeeping where the store itself tracks which published posts wait for the index (the
  :scale store without a log keeps a search mark, herald.feed.store.scale): every publish and every indexing
  through the store's public functions report to it. With a log (Kafka) the log's offsets are the progress and a
  store has no SearchProgress."
  (-tracked-publish! [p publish] "Calls (publish), which stores a post and returns it, recording the post as waiting for search; returns it.")
  (-indexed! [p posts] "Records posts as searchable."))

;; ---------------------------------------------------------------------------------------------------
;; the store: a plain map of roles

;; A store is a map {:graph g :feeds f :search x :cache c-or-nil :progress p-or-nil} plus this namespace's
;; bookkeeping (::open, ::backends, ::shared), made by `role-map`. Each public function below names its role and
;; calls that role's protocol; nothing forwards. The embedded and memory backends play the three data roles with
;; one value; the :scale store has one backend per role. Any single value that implements the role protocols
;; (a backend itself) is accepted wherever a store is, playing every role.

(defn role-map
  "A store from its roles: `{:graph :feeds :search}` (values implementing the role protocols), `:cache` (a Cache
  for participant lookups and friend lists, or nil), `:progress` (a SearchProgress, or nil), `:backends` (the
  values to close, in order, and to ask for readiness and stats; default: the distinct data roles, search first),
  `:shared` (a backend playing several roles of a composite, whose stats are prefixed \"memory-\"). Calls after
  `close-store!` throw ex-info :herald.feed.store/closed."
  [{:keys [graph feeds search cache progress backends shared]}]
  {:graph graph :feeds feeds :search search :cache cache :progress progress
   ::backends (vec (distinct (or backends [search feeds graph]))) ::shared shared ::open (AtomicBoolean. true)})

(defn- role-map? [s] (and (map? s) (not (record? s)) (contains? s ::open)))

(defn- role
  "The value playing role `k` in store `s` (s itself when it is a single backend); throws when s is closed."
  [s k]
  (if (role-map? s)
    (if (.get ^AtomicBoolean (::open s))
      (get s k)
      (throw (ex-info "the store is closed" {:type ::closed})))
    s))

(defn- feeds-of [s] (if (role-map? s) (:feeds s) s))
(defn- cache-of [s] (when (role-map? s) (:cache s)))
(defn- progress-of [s] (when (role-map? s) (:progress s)))

;; ---------------------------------------------------------------------------------------------------
;; validation

(def default-limit
  "Page size when opts carry no :limit."
  50)

(def max-limit
  "The largest :limit accepted."
  10000)

(defn- invalid [msg key value]
  (throw (ex-info msg {:type ::invalid :key key :value value})))

(defn- check-id [key id]
  (when-not (and (int? id) (pos? (long id)))
    (invalid (str key " must be a positive long id, got " (pr-str id)) key id))
  (long id))

(defn- check-string [key s]
  (when-not (string? s) (invalid (str key " must be a string, got " (pr-str s)) key s))
  s)

(defn- page-opts [opts]
  (let [{:keys [limit before] :or {limit default-limit}} opts]
    (when-not (and (int? limit) (<= 1 (long limit) max-limit))
      (invalid (str ":limit must be an integer in 1.." max-limit ", got " (pr-str limit)) :limit limit))
    (when (some? before) (cursor/decode before))
    {:limit (long limit) :before before}))

(defn- check-post [post]
  (when-not (map? post) (invalid (str "post must be a map, got " (pr-str post)) :post post))
  (check-id :from (:from post))
  (doseq [k [:occurred :subject :story]] (check-string k (get post k)))
  post)

(defn- check-stored-post [post]
  (check-id :id (:id post))
  (check-id :from (:from post))
  (when-not (int? (:ts post)) (invalid (str "post :ts must be a long, got " (pr-str (:ts post))) :ts (:ts post)))
  post)

(defn- check-recipients [recipients]
  (when-not (sequential? recipients) (invalid "recipients must be a sequence of ids" :recipients recipients))
  (mapv #(check-id :recipient %) (distinct recipients)))

(defn- check-deliveries
  "`deliveries` ({:post stored-post :recipients [ids]} each) validated, as a vector."
  [deliveries]
  (mapv (fn [{:keys [post recipients]}] {:post (check-stored-post post) :recipients (check-recipients recipients)})
        deliveries))

;; ---------------------------------------------------------------------------------------------------
;; public API

(defn create-participant!
  "Creates a participant named name (a string, any Unicode), returns {:id :name}. Durable on return."
  [s name]
  (-create-participant! (role s :graph) (check-string :name name)))

(defn participant
  "The participant {:id :name} with this id, or nil (graph role, through the cache role when there is one)."
  [s id]
  (let [g (role s :graph) id (check-id :id id)]
    (if-let [c (cache-of s)]
      (-fetch c [:participant id] #(-participant g id))
      (-participant g id))))

(defn befriend!
  "Befriends participants a and b, returns {:id :from a :to b :created? bool}. Idempotent and symmetric:
  (befriend! s b a) after (befriend! s a b) returns the same :id with :created? false. Befriending oneself
  throws ex-info {:type :herald.feed.store/invalid :key :to}; a pair with a block (see `block!`) throws ex-info
  {:type :herald.feed.store/blocked :blocker x :blocked y}."
  [s a b]
  (let [a (check-id :from a) b (check-id :to b)]
    (when (= a b) (invalid (str "a participant cannot befriend itself: " a) :to b))
    (let [r (-befriend! (role s :graph) a b)]
      (when-let [c (cache-of s)]
        ;; always: a racing caller that got :created? false must not read a list cached before the write
        (-invalidate! c [:friends a])
        (-invalidate! c [:friends b]))
      r)))

(defn friends
  "The friendships of participant id as [{:id :from id :to other}], ordered by the other's id."
  [s id]
  (let [g (role s :graph) id (check-id :id id)]
    (if-let [c (cache-of s)]
      (-fetch c [:friends id] #(-friends g id))
      (-friends g id))))

(defn publish!
  "Stores post {:from :occurred :subject :story} (strings; :id/:ts are assigned) with a pending fan-out
  record for recipients (a seq of ids, usually the sender's friends), atomically and durably. Returns the
  post with :id and :ts. Finish with fan-out! (or deliver! + complete-fanout!) and index!."
  [s post recipients]
  (let [f (role s :feeds)
        post (select-keys (check-post post) [:from :occurred :subject :story])
        recipients (check-recipients recipients)]
    (if-let [p (progress-of s)]
      (-tracked-publish! p #(-publish! f post recipients))
      (-publish! f post recipients))))

(defn new-post
  "The validated fields of a post to publish, {:from :occurred :subject :story} (as `publish!` takes them);
  throws ex-info {:type :herald.feed.store/invalid :key k} naming a bad one."
  [post]
  (select-keys (check-post post) [:from :occurred :subject :story]))

(defn logged-feeds?
  "True when `s` has the `LoggedFeeds` role (the feeds can be derived from a log outside the store)."
  [s]
  (satisfies? LoggedFeeds (feeds-of s)))

(defn put-outbound!
  "Upserts the author's copy of `post` (as assigned by a log: with :id and :ts), see `LoggedFeeds`. Idempotent."
  [s post]
  (-put-outbound! (role s :feeds) (check-stored-post post))
  nil)

(defn deliver-all!
  "Upserts, for each {:post :recipients} of `deliveries`, the author's outbound copy and every recipient's
  inbound copy (see `LoggedFeeds`). Idempotent; throws when a write failed."
  [s deliveries]
  (let [ds (check-deliveries deliveries)]
    (when (seq ds) (-deliver-all! (role s :feeds) ds))
    nil))

(defn post
  "The post with this id, or nil."
  [s id]
  (-post (role s :feeds) (check-id :id id)))

(defn outbound
  "A page {:items [post ...] :next cursor} of sender's posts, newest first.

  | key      | type   | default | meaning                                               |
  |----------|--------|---------|-------------------------------------------------------|
  | :limit   | int    | 50      | items per page, 1..10000                              |
  | :before  | string | nil     | the :next cursor of the previous page (opaque)         |

  A malformed cursor throws ex-info {:type :herald.feed.store/bad-cursor}."
  ([s sender] (outbound s sender nil))
  ([s sender opts] (-outbound (role s :feeds) (check-id :sender sender) (page-opts opts))))

(defn deliver!
  "Puts post (as returned by publish!) into recipient's inbound feed. Idempotent."
  [s recipient post]
  (-deliver! (role s :feeds) (check-id :recipient recipient) (check-stored-post post)))

(defn fan-out!
  "Delivers post to every recipient and completes its fan-out record (one atomic write in the embedded
  backend). Idempotent: running it twice, or after a crash, never duplicates an inbound item."
  [s post recipients]
  (-fan-out! (role s :feeds) (check-stored-post post) (check-recipients recipients)))

(defn fan-out-all!
  "Delivers and completes the fan-out of every `{:post :recipients}` of `deliveries` (feeds role): in one durable
  write when the role has `BatchFanOut`, else post by post. When it throws, none or some posts may be done; the
  caller retries post by post (idempotent)."
  [s deliveries]
  (let [f (role s :feeds)
        ds (check-deliveries deliveries)]
    (cond (empty? ds) nil
          (satisfies? BatchFanOut f) (-fan-out-all! f ds)
          :else (doseq [{:keys [post recipients]} ds] (-fan-out! f post recipients)))
    nil))

(defn inbound
  "A page {:items [post ...] :next cursor} of recipient's inbound feed, newest first. Options as outbound."
  ([s recipient] (inbound s recipient nil))
  ([s recipient opts] (-inbound (role s :feeds) (check-id :recipient recipient) (page-opts opts))))

(defn pending-fanouts
  "The fan-outs published but not completed: a seq of {:post :recipients}, oldest first. After a restart
  the service runs fan-out! on each."
  [s]
  (-pending-fanouts (role s :feeds)))

(defn complete-fanout!
  "Marks the fan-out of post-id as done. Idempotent."
  [s post-id]
  (-complete-fanout! (role s :feeds) (check-id :post-id post-id)))

(defn index!
  "Makes post (as returned by publish!) searchable. Idempotent by post id."
  [s post]
  (-index! (role s :search) (check-stored-post post))
  (some-> (progress-of s) (-indexed! [post]))
  nil)

(defn index-batch!
  "Makes every post of posts (a sequential collection of posts as returned by publish!) searchable, with
  the guarantees of index! for each of them:
  - idempotent by post id: a post already indexed, or repeated in posts, is indexed once;
  - visible to searches within the backend's lag (:search-max-lag-ms) after the call returns;
  - a post whose indexing fails does not fail the others and does not throw: the embedded backend counts
    the failure (:index-errors, /ready false), retries the post before its next commit and, beyond that,
    indexes it again on the next open (the index is derived data; nothing is lost);
  - every post is validated before any is indexed: a malformed one throws ex-info
    {:type :herald.feed.store/invalid} and nothing of the batch is indexed.
  Posts may come in any order and from concurrent callers. The embedded backend adds the whole batch in one
  Lucene call under one lock, so it costs less per post than index! on each; batches of 10-500 posts suit
  it. Returns nil."
  [s posts]
  (when-not (sequential? posts) (invalid "posts must be a sequential collection of posts" :posts posts))
  (run! check-stored-post posts)
  (when (seq posts)
    (-index-batch! (role s :search) posts)
    (some-> (progress-of s) (-indexed! posts)))
  nil)

(defn search
  "Sender ids of the posts whose subject or story contain every term of keywords (a string), one per
  matching post (a sender may repeat), newest first. Keywords without any word give [].

  | key    | type | default | meaning               |
  |--------|------|---------|-----------------------|
  | :limit | int  | 50      | most results, 1..10000 |"
  ([s keywords] (search s keywords nil))
  ([s keywords opts]
   (-search (role s :search) (check-string :keywords keywords) (select-keys (page-opts (dissoc opts :before)) [:limit]))))

(defn refresh-search!
  "Makes every post indexed before this call visible to the searches that follow (whatever the backend's
  visibility lag): for tests and admin tools, not the request path. Returns nil."
  [s]
  (-refresh-search! (role s :search))
  nil)

(defn ready?
  "True while the store is open and usable (for a readiness probe): every backend of a store of roles ready."
  [s]
  (if (role-map? s)
    (and (.get ^AtomicBoolean (::open s)) (every? -ready? (::backends s)))
    (-ready? s)))

(def counter-stats
  "The keys of stats values that are monotonic counters (only grow while the store is open; reset on
  reopen): export them as counters (Prometheus `counter`, `_total`); every other key is a gauge."
  #{:cache-hits :cache-misses :cache-evictions :index-errors :search-errors})

(def stat-help
  "One-line help text per stats key (for metrics HELP lines)."
  {:participants "Participants created (highest participant id)."
   :friendships "Friendships created (highest friendship id)."
   :posts "Posts published (highest post id)."
   :pending-fanouts "Published posts whose fan-out to friends' inbound feeds is not complete yet."
   :search-pending "Published posts not yet in a committed search index commit."
   :indexed-posts "Documents in the search index (committed or not)."
   :index-degraded "1 while the search index has failed (last indexing, commit or refresh), else 0."
   :index-errors "Failed search index operations (indexing or retrying a post, committing, refreshing) since the store opened."
   :search-errors "Searches that failed with an unexpected error since the store opened."
   :cache-hits "Participant and friend-list cache hits."
   :cache-misses "Participant and friend-list cache misses (loads from the store)."
   :cache-evictions "Entries evicted from the participant and friend-list cache."
   :cache-size "Entries in the participant and friend-list cache (estimate)."})

(def ^:private lifted-stats
  "Stats keys taken unprefixed from the role that owns them in a composite (so metrics keep their names)."
  {:graph [:participants :friendships]
   :feeds [:posts :pending-fanouts]
   :search [:indexed-posts :index-degraded :index-errors :search-errors]})

(defn- prefixed [prefix m]
  (into {} (map (fn [[k v]] [(keyword (str prefix "-" (name k))) v])) m))

(defn- roles-stats
  "One backend's stats as they are; a composite's prefixed by role (a backend shared by roles as memory-), with
  the lifted keys; the cache's prefixed cache-, the search progress's as they are."
  [{:keys [cache progress] ::keys [shared] :as s}]
  (let [rs [:graph :feeds :search]
        per-role (into {} (for [r rs] [r (get s r)]))
        stats-of (memoize (fn [b] (-stats b)))]
    (merge (if (and (nil? shared) (= 1 (count (distinct (vals per-role)))))
             (stats-of (:graph per-role))
             (merge (when shared (prefixed "memory" (stats-of shared)))
                    (apply merge (for [r rs :when (not (identical? shared (per-role r)))]
                                   (prefixed (name r) (stats-of (per-role r)))))
                    (apply merge (for [[r ks] lifted-stats] (select-keys (stats-of (per-role r)) ks)))))
           (when (satisfies? Lifecycle progress) (-stats progress))
           (when cache (prefixed "cache" (-cache-stats cache))))))

(defn stats
  "A flat map of numeric values, e.g. {:participants n :pending-fanouts n :cache-hits n}. The keys in
  counter-stats are monotonic counters, the others gauges (also as metadata: {:herald.feed.store/counters
  #{..}}); stat-help has a help text per key. Cheap enough for every scrape: no family is iterated."
  [s]
  (let [m (if (role-map? s) (do (role s :graph) (roles-stats s)) (-stats s))]
    (with-meta m {::counters (into #{} (filter counter-stats) (keys m))})))

(defn close-store!
  "Flushes and closes the store (idempotent): its search progress first, then every backend in order (the rest
  still closed when one throws; the first failure is then thrown)."
  [s]
  (if (role-map? s)
    (when (.compareAndSet ^AtomicBoolean (::open s) true false)
      (let [parts (cons (:progress s) (::backends s))
            errors (into [] (keep #(when (satisfies? Lifecycle %) (try (-close! %) nil (catch Throwable t t)))) parts)]
        (when-let [e (first errors)]
          (throw (ex-info (str "closing the store failed: " (ex-message e))
                          {:type ::io :errors (count errors)} e)))))
    (-close! s))
  nil)

(def ^:private backends
  {:memory 'herald.feed.store.memory/memory-store
   :embedded 'herald.feed.store.embedded/embedded-store
   :scale 'herald.feed.store.scale/open})

(defn open-store
  "Opens a store from config. The backend namespace is loaded on demand.

  | key       | type    | default   | meaning                                                        |
  |-----------|---------|-----------|----------------------------------------------------------------|
  | :type     | keyword | :embedded | :memory (in-process, volatile), :embedded (RocksDB + Lucene) or :scale (one server per role: PostgreSQL, Cassandra, OpenSearch, Redis) |
  | :cache    | map     | {}        | participant/friend cache, see herald.feed.store.cache; {:max-size 0} disables. With :scale, the Cache role: {:type :redis ...} or Caffeine options |

  Backend options: see herald.feed.store.embedded/embedded-store (:data-dir, :sync?, ...),
  herald.feed.store.scale/open (:graph :feeds :search :cache, ...) and herald.feed.store.memory/memory-store.
  Every store is a map of roles (see `role-map`); the :scale store opens one backend per role."
  [config]
  (let [{:keys [type cache] :or {type :embedded}} config
        ctor (or (get backends type)
                 (throw (ex-info (str "unknown store :type " (pr-str type) ", expected one of "
                                      (pr-str (keys backends)))
                                 {:type ::invalid :key :type :value type})))]
    (if (= :scale type)
      ((requiring-resolve ctor) (dissoc config :type))
      (let [b ((requiring-resolve ctor) (dissoc config :type :cache))
            c (when-not (and (map? cache) (= 0 (:max-size cache)))
                (try ((requiring-resolve 'herald.feed.store.cache/caffeine-cache) (or cache {}))
                     (catch Throwable t (-close! b) (throw t))))]
        (role-map {:graph b :feeds b :search b :cache c})))))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: posts edited and deleted (feeds role: PostEdits; search role: SearchEdits)

(defn- check-changes [changes]
  (when-not (and (map? changes) (seq changes) (every? #{:subject :story} (keys changes)))
    (invalid (str "changes must be a non-empty map of :subject and/or :story, got " (pr-str changes)) :changes changes))
  (doseq [[k v] changes] (check-string k v))
  changes)

(defn- one-backend?
  "True when the feeds role of `s` has `PostEdits` and also plays the search role (memory, embedded): it then
  edits and deletes every copy and its own index itself."
  [s f]
  (and (satisfies? PostEdits f) (identical? f (role s :search))))

(defn edit-post!
  "Feeds role (`PostEdits`, then the search role's `SearchEdits` when another backend plays it): replaces the
  :subject and/or :story of post `id` (`changes` holds one or both, strings), keeping its id, sender, time and place
  in every feed; durable on return. A feeds backend without `PostEdits` applies it through `LoggedEdits` (the
  :scale store without a log). Returns the edited post, or nil when there is no such post (or it was deleted)."
  [s id changes]
  (let [f (role s :feeds) id (check-id :id id) changes (check-changes (select-keys changes [:subject :story]))]
    (if (one-backend? s f)
      (-edit-post! f id changes)
      (when-let [p (-post f id)]
        (let [p (merge p changes)]
          (-apply-changes! f [{:edit p}])
          (-reindex! (role s :search) p)
          p)))))

(defn delete-post!
  "Feeds role (`PostEdits`, then the search role's `SearchEdits` when another backend plays it): deletes post `id`
  from its author's outbound feed, every inbound feed (also copies a fan-out in flight delivers later: a tombstone)
  and the search index; durable on return. Returns the post as it was, or nil when there is none (never was, or
  already deleted)."
  [s id]
  (let [f (role s :feeds) id (check-id :id id)]
    (if (one-backend? s f)
      (-delete-post! f id)
      (when-let [p (-post f id)]
        (-apply-changes! f [{:delete p}])
        (-unindex! (role s :search) id)
        p))))

(defn reindex!
  "Search role (`SearchEdits`): replaces the document of post (:id post) (as returned by edit-post!). Idempotent."
  [s post]
  (-reindex! (role s :search) (check-stored-post post))
  nil)

(defn unindex!
  "Search role (`SearchEdits`): removes the document of post `id` from the search index. Idempotent."
  [s id]
  (-unindex! (role s :search) (check-id :id id))
  nil)

(defn logged-edits?
  "True when the feeds role of `s` has `LoggedEdits`."
  [s]
  (satisfies? LoggedEdits (feeds-of s)))

(defn delete-outbound!
  "Feeds role (`LoggedEdits`): removes the author's copy of `post` (as stored) and records its tombstone."
  [s post]
  (-delete-outbound! (role s :feeds) (check-stored-post post))
  nil)

(defn apply-changes!
  "Feeds role (`LoggedEdits`): applies the change records `changes` (`{:edit post}` or `{:delete post}`, posts as
  stored, in log order) to every copy. Idempotent."
  [s changes]
  (let [cs (mapv (fn [c]
                   (cond (:edit c) {:edit (check-stored-post (:edit c))}
                         (:delete c) {:delete (check-stored-post (:delete c))}
                         :else (invalid (str "a change must be {:edit post} or {:delete post}, got " (pr-str c)) :changes c)))
                 changes)]
    (when (seq cs) (-apply-changes! (role s :feeds) cs))
    nil))

;; ---------------------------------------------------------------------------------------------------
;; relationships (the graph role): unfriend, mutes, blocks; paged friend lists and search (issue 11)

(defprotocol Relations
  "The graph role's relationships beyond befriending. Guarantees: every write is idempotent, atomic and durable
  on return; -block! ends the pair's friendship in the same atomic write, and a block and a befriend of one pair
  are linearizable: -befriend! of a pair with a block in either direction throws ex-info
  {:type :herald.feed.store/blocked :blocker x :blocked y} and writes nothing. Mutes and blocks are directed
  (`id` mutes or blocks `target`). The store does not check that the participants exist (the service does)."
  (-unfriend! [s a b] "Ends the friendship of a and b (either order); true when there was one.")
  (-mute! [s id target] "id mutes target; returns {:from id :target target :created? bool}.")
  (-unmute! [s id target] "Ends id's mute of target; true when there was one.")
  (-mutes [s id] "The participants id mutes, ascending ids.")
  (-block! [s id target] "id blocks target and their friendship ends, atomically; returns {:from id :target
  target :created? bool}.")
  (-unblock! [s id target] "Ends id's block of target; true when there was one.")
  (-blocks [s id] "The participants id blocks, ascending ids.")
  (-hidden [s id] "The set of participants whose posts id's inbound feed hides: those id mutes, those id blocks
  and those who block id (one cheap read; `hidden` keeps it in the cache role, invalidated by every write above)."))

(defprotocol SearchPages
  "The search role's paged search: like -search, with a cursor. Guarantees as SearchIndex; the cursor is the
  (ts, post id) of the last hit shown (herald.feed.store.cursor), hits are ordered newest first by (ts, id)."
  (-search-page [s keywords opts] "A page {:items [{:id post-id :from sender}] :next cursor} (items may carry :ts) of the
  newest posts matching every keyword term, older than opts' :before cursor when given; opts {:limit :before}."))

(defn- check-pair [a b what]
  (let [a (check-id :id a) b (check-id :target b)]
    (when (= a b) (invalid (str "a participant cannot " what " itself: " a) :target b))
    [a b]))

(defn- invalidate!
  "Drops keys ks from the cache role, when there is one, after a graph write: every key even when one fails (the
  first failure is thrown then). -invalidate! waits for a load in flight, so no friend list or hidden set loaded
  before the write is served after it."
  [s ks]
  (when-let [c (cache-of s)]
    (let [errors (into [] (keep #(try (-invalidate! c %) nil (catch Throwable t t))) ks)]
      (when-let [t (first errors)] (throw t)))))

(defn blocked-error?
  "True when `e` is the ex-info a graph role throws for a befriend of a blocked pair (see `Relations`)."
  [e]
  (= ::blocked (:type (ex-data e))))

(defn unfriend!
  "Graph role. Ends the friendship of a and b (either order): neither lists the other any more and later posts
  do not fan out between them (posts already delivered stay). Returns true when they were friends. Idempotent;
  a == b throws ex-info {:type :herald.feed.store/invalid}."
  [s a b]
  (let [[a b] (check-pair a b "unfriend")
        r (boolean (-unfriend! (role s :graph) a b))]
    (invalidate! s [[:friends a] [:friends b]])
    r))

(defn mute!
  "Graph role. `id` mutes `target`: `hidden` of id holds target until `unmute!`. The friendship and the other
  direction are untouched. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (check-pair id target "mute")
        r (-mute! (role s :graph) a b)]
    (invalidate! s [[:hidden a]])
    r))

(defn unmute!
  "Graph role. Ends `id`'s mute of `target`; true when there was one. Idempotent."
  [s id target]
  (let [[a b] (check-pair id target "unmute")
        r (boolean (-unmute! (role s :graph) a b))]
    (invalidate! s [[:hidden a]])
    r))

(defn mutes
  "Graph role. The participants `id` mutes, ascending ids."
  [s id]
  (vec (-mutes (role s :graph) (check-id :id id))))

(defn block!
  "Graph role. `id` blocks `target`: their friendship ends in the same atomic write, `hidden` of each holds the
  other, and `befriend!` of the pair (either order) throws ex-info {:type :herald.feed.store/blocked} until
  `unblock!`. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (check-pair id target "block")
        r (-block! (role s :graph) a b)]
    (invalidate! s [[:friends a] [:friends b] [:hidden a] [:hidden b]])
    r))

(defn unblock!
  "Graph role. Ends `id`'s block of `target` (a block by target stays); true when there was one. Does not
  restore the friendship. Idempotent."
  [s id target]
  (let [[a b] (check-pair id target "unblock")
        r (boolean (-unblock! (role s :graph) a b))]
    (invalidate! s [[:hidden a] [:hidden b]])
    r))

(defn blocks
  "Graph role. The participants `id` blocks, ascending ids."
  [s id]
  (vec (-blocks (role s :graph) (check-id :id id))))

(defn hidden
  "Graph role. The set of participant ids whose posts `id`'s inbound feed hides at read time: those id mutes,
  those id blocks and those who block id."
  [s id]
  (let [g (role s :graph) id (check-id :id id)]
    (if-let [c (cache-of s)]
      (-fetch c [:hidden id] #(set (-hidden g id)))
      (set (-hidden g id)))))

(defn search-page
  "Search role. A page {:items [{:id :from}] :next cursor} (items may carry :ts) of the posts whose subject or story contain every
  term of keywords, newest first; opts {:limit n :before cursor} as `outbound` (:before the :next of the
  previous page). Keywords without any word give an empty page."
  ([s keywords] (search-page s keywords nil))
  ([s keywords opts] (-search-page (role s :search) (check-string :keywords keywords) (page-opts opts))))
