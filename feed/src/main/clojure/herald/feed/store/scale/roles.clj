(ns herald.feed.store.scale.roles
  "Opening the :scale store's role backends from config: one backend per role :type, loaded on demand, the roles
  left in memory sharing one memory store."
  (:require [herald.feed.store :as store]
            [herald.feed.store.cache :as cache]
            [herald.feed.store.memory :as memory]
            [herald.feed.store.scale.memory]))

(set! *warn-on-reflection* true)

(def backends
  "role -> backend :type -> the constructor (a symbol, resolved on demand). :memory is the shared memory store
  for :graph :feeds :search, and Caffeine (in-process) for :cache."
  {:graph {:postgres 'herald.feed.store.postgres/open}
   :feeds {:cassandra 'herald.feed.store.cassandra/open}
   :search {:opensearch 'herald.feed.store.opensearch/open}
   :cache {:redis 'herald.feed.store.redis/open}})

(defn invalid!
  "Throws ex-info {:type :herald.feed.store/invalid :key path :value v} naming the key path."
  [path v what]
  (throw (ex-info (str "store config " (pr-str path) " must be " what ", got " (pr-str v))
                  {:type :herald.feed.store/invalid :key path :value v})))

(defn role-type
  "The backend :type of role's config (nil -> :memory); throws naming [role :type] when unknown."
  [role config]
  (when-not (or (nil? config) (map? config)) (invalid! [role] config "a map with a :type"))
  (let [t (:type config :memory)
        known (cons :memory (keys (get backends role)))]
    (when-not (some #{t} known)
      (invalid! [role :type] t (str "one of " (pr-str (vec known)))))
    t))

(defn- close-quietly [x]
  (when (satisfies? store/Lifecycle x)
    (try (store/-close! x) (catch Throwable _ nil))))

(defn- open-role [role config shared]
  (let [t (role-type role config)]
    (if (= :memory t)
      @shared
      (try ((requiring-resolve (get-in backends [role t])) (dissoc config :type))
           (catch clojure.lang.ExceptionInfo e
             (let [d (ex-data e) k (:key d)]
               (throw (ex-info (str "cannot open the :scale store's " role " backend " t ": " (ex-message e))
                               (assoc d :type (:type d :herald.feed.store/unavailable) :role role
                                      :key (cond (vector? k) (into [role] k) k [role k] :else [role]))
                               e))))))))

(defn- open-cache
  "The Cache for config: nil (no cache) for {:max-size 0}, Caffeine for nil / {:type :memory}, else the backend."
  [config]
  (let [t (role-type :cache config)
        opts (dissoc config :type)]
    (cond (= 0 (:max-size opts)) nil
          (= :memory t) (cache/caffeine-cache opts)
          :else (open-role :cache config nil))))

(defn open-roles
  "{:graph :feeds :search :cache :memory} opened from config (the :cache nil when disabled, :memory the shared
  memory store or nil). Roles are checked before any is opened; on a failure, the ones opened are closed."
  [config]
  (doseq [r [:graph :feeds :search :cache]] (role-type r (get config r)))
  (let [shared (delay (memory/memory-store))
        opened (volatile! [])
        open! (fn [f] (let [x (f)] (vswap! opened conj x) x))]
    (try
      (let [graph (open! #(open-role :graph (:graph config) shared))
            feeds (open! #(open-role :feeds (:feeds config) shared))
            search (open! #(open-role :search (:search config) shared))
            c (open! #(open-cache (:cache config)))]
        {:graph graph :feeds feeds :search search :cache c :memory (when (realized? shared) @shared)})
      (catch Throwable t
        (run! close-quietly (distinct (remove nil? @opened)))
        (throw t)))))

(defn cached-graph
  "The graph role behind the cache (participant lookups and friend lists), or the graph itself without one."
  [graph c]
  (if c (cache/->CachedStore graph c) graph))
