(ns herald.feed.store.lifecycle
  "Every backend's `Lifecycle` and the store as a plain map of roles: building it, picking a role (which throws
  once the store is closed), and its readiness, stats and closing over all of its backends."
  (:require [herald.feed.store.cache :as cache])
  (:import (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

(defprotocol Lifecycle
  "Opening state and closing. -close! flushes and releases everything and is idempotent; a durable
  backend's calls after close throw ex-info of :type :herald.feed.store/closed."
  (-close! [s] "Flushes, commits and closes.")
  (-ready? [s] "True while the store is open and usable (false while its search index is failing).")
  (-stats [s] "A flat map of numbers (keyword -> number) for metrics: counters (see counter-stats) and gauges."))

;; A store is a map {:graph g :feeds f :search x :cache c-or-nil :progress p-or-nil} plus this namespace's
;; bookkeeping (::open, ::backends, ::shared), made by `role-map`. Each public function of herald.feed.store
;; names its role and calls that role's protocol; nothing forwards. The embedded and memory backends play the
;; three data roles with one value; the :scale store has one backend per role. Any single value that implements
;; the role protocols (a backend itself) is accepted wherever a store is, playing every role.

(defn role-map
  "The store map of `roles` (see herald.feed.store/role-map for the keys)."
  [{:keys [graph feeds search cache progress backends shared]}]
  {:graph graph :feeds feeds :search search :cache cache :progress progress
   ::backends (vec (distinct (or backends [search feeds graph]))) ::shared shared ::open (AtomicBoolean. true)})

(defn role-map?
  "True when `s` is a store made by `role-map` (not a single backend playing every role)."
  [s]
  (and (map? s) (not (record? s)) (contains? s ::open)))

(defn role
  "The value playing role `k` in store `s` (s itself when it is a single backend); throws ex-info
  :herald.feed.store/closed when s is closed."
  [s k]
  (if (role-map? s)
    (if (.get ^AtomicBoolean (::open s))
      (get s k)
      (throw (ex-info "the store is closed" {:type :herald.feed.store/closed})))
    s))

(defn feeds-of "The feeds role of `s`, open or not." [s] (if (role-map? s) (:feeds s) s))
(defn cache-of "The cache role of `s`, or nil." [s] (when (role-map? s) (:cache s)))
(defn progress-of "The search progress of `s`, or nil." [s] (when (role-map? s) (:progress s)))

(defn ready?
  "True while `s` is open and every backend of it ready."
  [s]
  (if (role-map? s)
    (and (.get ^AtomicBoolean (::open s)) (every? -ready? (::backends s)))
    (-ready? s)))

(defn close!
  "Closes `s` once: its search progress first, then every backend in order (the rest still closed when one throws;
  the first failure is then thrown as ex-info :herald.feed.store/io)."
  [s]
  (if (role-map? s)
    (when (.compareAndSet ^AtomicBoolean (::open s) true false)
      (let [parts (cons (:progress s) (::backends s))
            errors (into [] (keep #(when (satisfies? Lifecycle %) (try (-close! %) nil (catch Throwable t t)))) parts)]
        (when-let [e (first errors)]
          (throw (ex-info (str "closing the store failed: " (ex-message e))
                          {:type :herald.feed.store/io :errors (count errors)} e)))))
    (-close! s))
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
           (when cache (prefixed "cache" (cache/-cache-stats cache))))))

(defn stats
  "The flat stats map of `s` (throws when closed): see herald.feed.store/stats."
  [s]
  (if (role-map? s) (do (role s :graph) (roles-stats s)) (-stats s)))
