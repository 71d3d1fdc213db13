(ns herald.feed.store
  "The feed's storage API: every operation a caller needs, on a store that is a plain map of roles
  `{:graph :feeds :search :cache}`; each function validates its arguments and calls the role it names. Where the
  rest lives: each role's contract (its protocols and guarantees) in herald.feed.store.graph, .feeds, .search and
  .cache; the role map, readiness, stats and closing in .lifecycle; the argument checks in .validate; the backends
  in .memory, .embedded and .scale (opened by `open-store`)."
  (:require [herald.feed.store.cache :as cache]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.search :as search]
            [herald.feed.store.validate :as v]))

(set! *warn-on-reflection* true)

;; Ids are positive longs; posts and pages are described in herald.feed.store.feeds.

(defn role-map
  "A store from its roles: `{:graph :feeds :search}` (values implementing the role protocols), `:cache` (a Cache
  for participant lookups and friend lists, or nil), `:progress` (a SearchProgress, or nil), `:backends` (the
  values to close, in order, and to ask for readiness and stats; default: the distinct data roles, search first),
  `:shared` (a backend playing several roles of a composite, whose stats are prefixed \"memory-\"). Calls after
  `close-store!` throw ex-info :herald.feed.store/closed. Any single backend implementing every role protocol is
  also accepted wherever a store is."
  [roles]
  (lc/role-map roles))

(def max-limit
  "The largest :limit accepted."
  v/max-limit)

(defn batch-fan-out?
  "True when the feeds role of `store` has the `BatchFanOut` capability (herald.feed.store.feeds)."
  [store]
  (satisfies? feeds/BatchFanOut (lc/feeds-of store)))

;; ---------------------------------------------------------------------------------------------------
;; participants and friends (graph role), posts and feeds (feeds role), search (search role)

(defn create-participant!
  "Creates a participant named name (a string, any Unicode), returns {:id :name}. Durable on return."
  [s name]
  (graph/-create-participant! (lc/role s :graph) (v/check-string :name name)))

(defn participant
  "The participant {:id :name} with this id, or nil (graph role, through the cache role when there is one)."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (if-let [c (lc/cache-of s)]
      (cache/-fetch c [:participant id] #(graph/-participant g id))
      (graph/-participant g id))))

(defn befriend!
  "Befriends participants a and b, returns {:id :from a :to b :created? bool}. Idempotent and symmetric:
  (befriend! s b a) after (befriend! s a b) returns the same :id with :created? false. Befriending oneself
  throws ex-info {:type :herald.feed.store/invalid :key :to}; a pair with a block (see `block!`) throws ex-info
  {:type :herald.feed.store/blocked :blocker x :blocked y}."
  [s a b]
  (let [a (v/check-id :from a) b (v/check-id :to b)]
    (when (= a b) (v/invalid (str "a participant cannot befriend itself: " a) :to b))
    (let [r (graph/-befriend! (lc/role s :graph) a b)]
      (when-let [c (lc/cache-of s)]
        ;; always: a racing caller that got :created? false must not read a list cached before the write
        (cache/-invalidate! c [:friends a])
        (cache/-invalidate! c [:friends b]))
      r)))

(defn friends
  "The friendships of participant id as [{:id :from id :to other}], ordered by the other's id."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (if-let [c (lc/cache-of s)]
      (cache/-fetch c [:friends id] #(graph/-friends g id))
      (graph/-friends g id))))

(defn new-post
  "The validated fields of a post to publish, {:from :occurred :subject :story} (as `publish!` takes them);
  throws ex-info {:type :herald.feed.store/invalid :key k} naming a bad one."
  [post]
  (select-keys (v/check-post post) [:from :occurred :subject :story]))

(defn publish!
  "Stores post {:from :occurred :subject :story} (strings; :id/:ts are assigned) with a pending fan-out
  record for recipients (a seq of ids, usually the sender's friends), atomically and durably. Returns the
  post with :id and :ts. Finish with fan-out! (or deliver! + complete-fanout!) and index!."
  [s post recipients]
  (let [f (lc/role s :feeds)
        post (new-post post)
        recipients (v/check-recipients recipients)]
    (if-let [p (lc/progress-of s)]
      (search/-tracked-publish! p #(feeds/-publish! f post recipients))
      (feeds/-publish! f post recipients))))

(defn logged-feeds?
  "True when `s` has the `LoggedFeeds` role (the feeds can be derived from a log outside the store)."
  [s]
  (satisfies? feeds/LoggedFeeds (lc/feeds-of s)))

(defn put-outbound!
  "Upserts the author's copy of `post` (as assigned by a log: with :id and :ts), see `LoggedFeeds`. Idempotent."
  [s post]
  (feeds/-put-outbound! (lc/role s :feeds) (v/check-stored-post post))
  nil)

(defn deliver-all!
  "Upserts, for each {:post :recipients} of `deliveries`, the author's outbound copy and every recipient's
  inbound copy (see `LoggedFeeds`). Idempotent; throws when a write failed."
  [s deliveries]
  (let [ds (v/check-deliveries deliveries)]
    (when (seq ds) (feeds/-deliver-all! (lc/role s :feeds) ds))
    nil))

(defn post
  "The post with this id, or nil."
  [s id]
  (feeds/-post (lc/role s :feeds) (v/check-id :id id)))

(defn outbound
  "A page {:items [post ...] :next cursor} of sender's posts, newest first.

  | key      | type   | default | meaning                                               |
  |----------|--------|---------|-------------------------------------------------------|
  | :limit   | int    | 50      | items per page, 1..10000                              |
  | :before  | string | nil     | the :next cursor of the previous page (opaque)         |

  A malformed cursor throws ex-info {:type :herald.feed.store/bad-cursor}."
  ([s sender] (outbound s sender nil))
  ([s sender opts] (feeds/-outbound (lc/role s :feeds) (v/check-id :sender sender) (v/page-opts opts))))

(defn deliver!
  "Puts post (as returned by publish!) into recipient's inbound feed. Idempotent."
  [s recipient post]
  (feeds/-deliver! (lc/role s :feeds) (v/check-id :recipient recipient) (v/check-stored-post post)))

(defn fan-out!
  "Delivers post to every recipient and completes its fan-out record (one atomic write in the embedded
  backend). Idempotent: running it twice, or after a crash, never duplicates an inbound item."
  [s post recipients]
  (feeds/-fan-out! (lc/role s :feeds) (v/check-stored-post post) (v/check-recipients recipients)))

(defn fan-out-all!
  "Delivers and completes the fan-out of every `{:post :recipients}` of `deliveries` (feeds role): in one durable
  write when the role has `BatchFanOut`, else post by post. When it throws, none or some posts may be done; the
  caller retries post by post (idempotent)."
  [s deliveries]
  (let [f (lc/role s :feeds)
        ds (v/check-deliveries deliveries)]
    (cond (empty? ds) nil
          (satisfies? feeds/BatchFanOut f) (feeds/-fan-out-all! f ds)
          :else (doseq [{:keys [post recipients]} ds] (feeds/-fan-out! f post recipients)))
    nil))

(defn inbound
  "A page {:items [post ...] :next cursor} of recipient's inbound feed, newest first. Options as outbound."
  ([s recipient] (inbound s recipient nil))
  ([s recipient opts] (feeds/-inbound (lc/role s :feeds) (v/check-id :recipient recipient) (v/page-opts opts))))

(defn pending-fanouts
  "The fan-outs published but not completed: a seq of {:post :recipients}, oldest first. After a restart
  the service runs fan-out! on each."
  [s]
  (feeds/-pending-fanouts (lc/role s :feeds)))

(defn complete-fanout!
  "Marks the fan-out of post-id as done. Idempotent."
  [s post-id]
  (feeds/-complete-fanout! (lc/role s :feeds) (v/check-id :post-id post-id)))

(defn index!
  "Makes post (as returned by publish!) searchable. Idempotent by post id."
  [s post]
  (search/-index! (lc/role s :search) (v/check-stored-post post))
  (some-> (lc/progress-of s) (search/-indexed! [post]))
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
  (when-not (sequential? posts) (v/invalid "posts must be a sequential collection of posts" :posts posts))
  (run! v/check-stored-post posts)
  (when (seq posts)
    (search/-index-batch! (lc/role s :search) posts)
    (some-> (lc/progress-of s) (search/-indexed! posts)))
  nil)

(defn search
  "Sender ids of the posts whose subject or story contain every term of keywords (a string), one per
  matching post (a sender may repeat), newest first. Keywords without any word give [].

  | key    | type | default | meaning               |
  |--------|------|---------|-----------------------|
  | :limit | int  | 50      | most results, 1..10000 |"
  ([s keywords] (search s keywords nil))
  ([s keywords opts]
   (search/-search (lc/role s :search) (v/check-string :keywords keywords) (select-keys (v/page-opts (dissoc opts :before)) [:limit]))))

(defn refresh-search!
  "Makes every post indexed before this call visible to the searches that follow (whatever the backend's
  visibility lag): for tests and admin tools, not the request path. Returns nil."
  [s]
  (search/-refresh-search! (lc/role s :search))
  nil)

(defn ready?
  "True while the store is open and usable (for a readiness probe): every backend of a store of roles ready."
  [s]
  (lc/ready? s))

(defn stats
  "A flat map of numeric values, e.g. {:participants n :pending-fanouts n :cache-hits n}. The keys in
  herald.feed.store.lifecycle/counter-stats are monotonic counters, the others gauges (also as metadata:
  {:herald.feed.store/counters #{..}}); lifecycle/stat-help has a help text per key. Cheap enough for every
  scrape: no family is iterated."
  [s]
  (let [m (lc/stats s)]
    (with-meta m {::counters (into #{} (filter lc/counter-stats) (keys m))})))

(defn close-store!
  "Flushes and closes the store (idempotent): its search progress first, then every backend in order (the rest
  still closed when one throws; the first failure is then thrown)."
  [s]
  (lc/close! s))

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
                     (catch Throwable t (lc/-close! b) (throw t))))]
        (role-map {:graph b :feeds b :search b :cache c})))))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: posts edited and deleted (feeds role: PostEdits; search role: SearchEdits)

(defn- one-backend?
  "True when the feeds role of `s` has `PostEdits` and also plays the search role (memory, embedded): it then
  edits and deletes every copy and its own index itself."
  [s f]
  (and (satisfies? feeds/PostEdits f) (identical? f (lc/role s :search))))

(defn edit-post!
  "Feeds role (`PostEdits`, then the search role's `SearchEdits` when another backend plays it): replaces the
  :subject and/or :story of post `id` (`changes` holds one or both, strings), keeping its id, sender, time and place
  in every feed; durable on return. A feeds backend without `PostEdits` applies it through `LoggedEdits` (the
  :scale store without a log). Returns the edited post, or nil when there is no such post (or it was deleted)."
  [s id changes]
  (let [f (lc/role s :feeds) id (v/check-id :id id) changes (v/check-changes (select-keys changes [:subject :story]))]
    (if (one-backend? s f)
      (feeds/-edit-post! f id changes)
      (when-let [p (feeds/-post f id)]
        (let [p (merge p changes)]
          (feeds/-apply-changes! f [{:edit p}])
          (search/-reindex! (lc/role s :search) p)
          p)))))

(defn delete-post!
  "Feeds role (`PostEdits`, then the search role's `SearchEdits` when another backend plays it): deletes post `id`
  from its author's outbound feed, every inbound feed (also copies a fan-out in flight delivers later: a tombstone)
  and the search index; durable on return. Returns the post as it was, or nil when there is none (never was, or
  already deleted)."
  [s id]
  (let [f (lc/role s :feeds) id (v/check-id :id id)]
    (if (one-backend? s f)
      (feeds/-delete-post! f id)
      (when-let [p (feeds/-post f id)]
        (feeds/-apply-changes! f [{:delete p}])
        (search/-unindex! (lc/role s :search) id)
        p))))

(defn reindex!
  "Search role (`SearchEdits`): replaces the document of post (:id post) (as returned by edit-post!). Idempotent."
  [s post]
  (search/-reindex! (lc/role s :search) (v/check-stored-post post))
  nil)

(defn unindex!
  "Search role (`SearchEdits`): removes the document of post `id` from the search index. Idempotent."
  [s id]
  (search/-unindex! (lc/role s :search) (v/check-id :id id))
  nil)

(defn logged-edits?
  "True when the feeds role of `s` has `LoggedEdits`."
  [s]
  (satisfies? feeds/LoggedEdits (lc/feeds-of s)))

(defn delete-outbound!
  "Feeds role (`LoggedEdits`): removes the author's copy of `post` (as stored) and records its tombstone."
  [s post]
  (feeds/-delete-outbound! (lc/role s :feeds) (v/check-stored-post post))
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
    (when (seq cs) (feeds/-apply-changes! (lc/role s :feeds) cs))
    nil))

;; ---------------------------------------------------------------------------------------------------
;; relationships (the graph role): unfriend, mutes, blocks; paged friend lists and search (issue 11)

(defn- invalidate!
  "Drops keys ks from the cache role, when there is one, after a graph write: every key even when one fails (the
  first failure is thrown then). -invalidate! waits for a load in flight, so no friend list or hidden set loaded
  before the write is served after it."
  [s ks]
  (when-let [c (lc/cache-of s)]
    (let [errors (into [] (keep #(try (cache/-invalidate! c %) nil (catch Throwable t t))) ks)]
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
  (let [[a b] (v/check-pair a b "unfriend")
        r (boolean (graph/-unfriend! (lc/role s :graph) a b))]
    (invalidate! s [[:friends a] [:friends b]])
    r))

(defn mute!
  "Graph role. `id` mutes `target`: `hidden` of id holds target until `unmute!`. The friendship and the other
  direction are untouched. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (v/check-pair id target "mute")
        r (graph/-mute! (lc/role s :graph) a b)]
    (invalidate! s [[:hidden a]])
    r))

(defn unmute!
  "Graph role. Ends `id`'s mute of `target`; true when there was one. Idempotent."
  [s id target]
  (let [[a b] (v/check-pair id target "unmute")
        r (boolean (graph/-unmute! (lc/role s :graph) a b))]
    (invalidate! s [[:hidden a]])
    r))

(defn mutes
  "Graph role. The participants `id` mutes, ascending ids."
  [s id]
  (vec (graph/-mutes (lc/role s :graph) (v/check-id :id id))))

(defn block!
  "Graph role. `id` blocks `target`: their friendship ends in the same atomic write, `hidden` of each holds the
  other, and `befriend!` of the pair (either order) throws ex-info {:type :herald.feed.store/blocked} until
  `unblock!`. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (v/check-pair id target "block")
        r (graph/-block! (lc/role s :graph) a b)]
    (invalidate! s [[:friends a] [:friends b] [:hidden a] [:hidden b]])
    r))

(defn unblock!
  "Graph role. Ends `id`'s block of `target` (a block by target stays); true when there was one. Does not
  restore the friendship. Idempotent."
  [s id target]
  (let [[a b] (v/check-pair id target "unblock")
        r (boolean (graph/-unblock! (lc/role s :graph) a b))]
    (invalidate! s [[:hidden a] [:hidden b]])
    r))

(defn blocks
  "Graph role. The participants `id` blocks, ascending ids."
  [s id]
  (vec (graph/-blocks (lc/role s :graph) (v/check-id :id id))))

(defn hidden
  "Graph role. The set of participant ids whose posts `id`'s inbound feed hides at read time: those id mutes,
  those id blocks and those who block id."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (if-let [c (lc/cache-of s)]
      (cache/-fetch c [:hidden id] #(set (graph/-hidden g id)))
      (set (graph/-hidden g id)))))

(defn search-page
  "Search role. A page {:items [{:id :from}] :next cursor} (items may carry :ts) of the posts whose subject or story
  contain every term of keywords, newest first; opts {:limit n :before cursor} as `outbound` (:before the :next of
  the previous page), and :hidden, a set of participant ids whose posts the page leaves out (a searcher's
  `hidden`): the page still holds :limit items while other matches remain. Keywords without any word give an
  empty page."
  ([s keywords] (search-page s keywords nil))
  ([s keywords opts]
   (search/-search-page (lc/role s :search) (v/check-string :keywords keywords)
                        (assoc (v/page-opts opts) :hidden (v/check-hidden (:hidden opts))))))
;; ---------------------------------------------------------------------------------------------------
;; issue 10: idempotency keys (herald.feed.store.keys: KeyedPublish on the feeds role, KeyReservations on the graph role)

(defn keyed-publish?
  "True when the feeds role of `s` has `KeyedPublish` (a post and its key record in one atomic write)."
  [s]
  (satisfies? keys/KeyedPublish (lc/feeds-of s)))

(defn key-reservations?
  "True when the graph role of `s` has `KeyReservations` (a key reserved before a post goes on an outside log)."
  [s]
  (satisfies? keys/KeyReservations (if (lc/role-map? s) (:graph s) s)))

(defn publish-keyed!
  "Feeds role (`KeyedPublish`): `publish!` of `post` for `recipients` under the key request `k` (see
  herald.feed.store.keys), the post, its pending fan-out and its key record in one atomic durable write; or, when
  (owner, key) names a live record, that record and no write. Returns the key record {:post :fingerprint
  :expires-at :created?}."
  [s post recipients k]
  (let [f (lc/role s :feeds)
        post (new-post post)
        recipients (v/check-recipients recipients)]
    (if-let [p (lc/progress-of s)]
      (let [rec (volatile! nil)]
        ;; a repeat stores no post (nil to the tracker), so search does not wait for one
        (search/-tracked-publish! p #(let [r (vreset! rec (keys/-publish-keyed! f post recipients k))]
                                       (when (:created? r) (:post r))))
        @rec)
      (keys/-publish-keyed! f post recipients k))))

(defn reserve-key!
  "Graph role (`KeyReservations`): the live key record of (owner, key) of key request `k`, written with `k`'s
  :post (a prepared post with :id and :ts, validated here) when there is none. Returns {:post :fingerprint
  :expires-at :created?}."
  [s k]
  (keys/-reserve-key! (lc/role s :graph) (update k :post v/check-stored-post)))

(defn purge-keys!
  "Deletes the key records and reservations expired at `now` (epoch ms) from whichever roles of `s` keep them;
  returns how many."
  [s now]
  (+ (long (if (keyed-publish? s) (keys/-purge-keys! (lc/role s :feeds) now) 0))
     (long (if (key-reservations? s) (keys/-purge-reservations! (lc/role s :graph) now) 0))))
