(ns herald.feed.store.lifecycle
  "Every backend's `Lifecycle` and the store's shape, a plain map of roles: building it (`role-map`) and picking a
  role from it (`role`, which throws once the store is closed). The role namespaces (graph, feeds, search, keys)
  stand on this one; herald.feed.store opens, closes and reports on the whole map."
  (:import (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

(defprotocol Lifecycle
  "Opening state and closing. -close! flushes and releases everything and is idempotent; a durable
  backend's calls after close throw ex-info of :type :herald.feed.store/closed."
  (-close! [s] "Flushes, commits and closes.")
  (-ready? [s] "True while the store is open and usable (false while its search index is failing).")
  (-stats [s] "A flat map of numbers (keyword -> number) for metrics: counters (see counter-stats) and gauges."))

;; A store is a map {:graph g :feeds f :search x :cache c-or-nil :progress p-or-nil} plus this namespace's
;; bookkeeping (::open, ::backends, ::shared, read by herald.feed.store's ready?, stats and close-store!), made by
;; `role-map`. Each public function of a role namespace names its role and calls that role's protocol; nothing
;; forwards. The embedded and memory backends play the
;; three data roles with one value; the :scale store has one backend per role. Any single value that implements
;; the role protocols (a backend itself) is accepted wherever a store is, playing every role.

(defn role-map
  "A store from its roles: `{:graph :feeds :search}` (values implementing the role protocols), `:cache` (a Cache
  for participant lookups and friend lists, or nil), `:progress` (a SearchProgress, or nil), `:backends` (the
  values to close, in order, and to ask for readiness and stats; default: the distinct data roles, search first),
  `:shared` (a backend playing several roles of a composite, whose stats are prefixed \"memory-\"). Calls after
  herald.feed.store/close-store! throw ex-info :herald.feed.store/closed. Any single backend implementing every
  role protocol is also accepted wherever a store is."
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
