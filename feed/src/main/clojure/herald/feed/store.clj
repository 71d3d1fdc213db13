(ns herald.feed.store
  "The feed's store: a plain map of roles `{:graph :feeds :search :cache}` (herald.feed.store.lifecycle/role-map),
  opened from config here (`open-store`), then used through the functions of each role's namespace, where the
  role's protocols state its guarantees: herald.feed.store.graph (participants, friends, mutes, blocks),
  .feeds (posts, outbound and inbound feeds, the fan-out), .search (the keyword index) and .keys (idempotency
  keys); the cache role is herald.feed.store.cache. This namespace holds what spans every role: opening, readiness,
  stats and closing of the whole map, and the edits and deletes of a post, which the search role follows. The
  argument checks are herald.feed.store.validate; the backends herald.feed.store.memory, .embedded and .scale."
  (:require [herald.feed.store.cache :as cache]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.search :as search]
            [herald.feed.store.validate :as v])
  (:import (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------------------------------------------
;; opening, readiness and closing of a store of roles

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
  Every store is a map of roles (herald.feed.store.lifecycle/role-map); the :scale store opens one backend per role."
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
        (lc/role-map {:graph b :feeds b :search b :cache c})))))

(defn ready?
  "True while the store is open and usable (for a readiness probe): every backend of a store of roles ready."
  [s]
  (if (lc/role-map? s)
    (and (.get ^AtomicBoolean (::lc/open s)) (every? lc/-ready? (::lc/backends s)))
    (lc/-ready? s)))

(defn close-store!
  "Flushes and closes the store (idempotent): its search progress first, then every backend in order (the rest
  still closed when one throws; the first failure is then thrown as ex-info :herald.feed.store/io)."
  [s]
  (if (lc/role-map? s)
    (when (.compareAndSet ^AtomicBoolean (::lc/open s) true false)
      (let [parts (cons (:progress s) (::lc/backends s))
            errors (into [] (keep #(when (satisfies? lc/Lifecycle %) (try (lc/-close! %) nil (catch Throwable t t)))) parts)]
        (when-let [e (first errors)]
          (throw (ex-info (str "closing the store failed: " (ex-message e))
                          {:type ::io :errors (count errors)} e)))))
    (lc/-close! s))
  nil)

;; ---------------------------------------------------------------------------------------------------
;; stats of a store of roles

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
  [{:keys [cache progress] ::lc/keys [shared] :as s}]
  (let [rs [:graph :feeds :search]
        per-role (into {} (for [r rs] [r (get s r)]))
        stats-of (memoize (fn [b] (lc/-stats b)))]
    (merge (if (and (nil? shared) (= 1 (count (distinct (vals per-role)))))
             (stats-of (:graph per-role))
             (merge (when shared (prefixed "memory" (stats-of shared)))
                    (apply merge (for [r rs :when (not (identical? shared (per-role r)))]
                                   (prefixed (name r) (stats-of (per-role r)))))
                    (apply merge (for [[r ks] lifted-stats] (select-keys (stats-of (per-role r)) ks)))))
           (when (satisfies? lc/Lifecycle progress) (lc/-stats progress))
           (when cache (prefixed "cache" (cache/-cache-stats cache))))))

(defn stats
  "A flat map of numeric values, e.g. {:participants n :pending-fanouts n :cache-hits n}, throwing once the store
  is closed. The keys in `counter-stats` are monotonic counters, the others gauges (also as metadata:
  {:herald.feed.store/counters #{..}}); `stat-help` has a help text per key. Cheap enough for every scrape: no
  family is iterated."
  [s]
  (let [m (if (lc/role-map? s) (do (lc/role s :graph) (roles-stats s)) (lc/-stats s))]
    (with-meta m {::counters (into #{} (filter counter-stats) (keys m))})))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: posts edited and deleted (feeds role: PostEdits or LoggedEdits; search role: SearchEdits)

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
