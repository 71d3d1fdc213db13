(ns herald.feed.store.scale.roles
  "Opening the :scale store's role backends from config: one backend per role :type, loaded on demand, the roles
  put in memory ({:type :memory}, never by leaving a role out) sharing one memory store."
  (:require [herald.feed.store.lifecycle :as lifecycle]
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

(def role-keys
  "The roles every :scale store config must give, each a map with a :type."
  [:graph :feeds :search :cache])

(def all-in-memory
  "A :scale store config with every role in memory: merge the roles given a server over it, e.g.
  (merge all-in-memory {:type :scale :cache {:type :redis ...}})."
  {:graph {:type :memory} :feeds {:type :memory} :search {:type :memory} :cache {:type :memory}})

(def scale-options
  "The :scale store's own options besides the roles (see herald.feed.store.scale/open): the keys `open-roles`
  accepts when its caller names none."
  #{:index-mark-ms :index-retry-ms :catch-up-batch})

(def ^:private memory-options
  "The options a role in memory takes: none for the shared memory store, Caffeine's for the cache."
  {:graph #{} :feeds #{} :search #{} :cache #{:max-size :expire-after-ms}})

(defn- edit-distance
  "Levenshtein distance of two strings (short keys only)."
  [^String a ^String b]
  (peek (reduce (fn [prev ca]
                  (reduce (fn [row [j cb]]
                            (conj row (min (inc (long (peek row))) (inc (long (prev (inc (long j)))))
                                           (+ (long (prev j)) (if (= ca cb) 0 1)))))
                          [(inc (long (first prev)))] (map-indexed vector b)))
                (vec (range (inc (count b)))) a)))

(defn- did-you-mean [k known]
  (when-let [c (first (sort-by #(edit-distance (name k) (name %)) (filter #(<= (long (edit-distance (name k) (name %))) 2) known)))]
    (str " (did you mean " c "?)")))

(defn role-type
  "The backend :type of role's config; throws naming [role] when it is missing or not a map, [role :type] when
  the type is unknown, and [role k] for an option a role in memory does not take."
  [role config]
  (when (nil? config)
    (invalid! [role] config (str "a map with a :type: every role needs a backend, e.g. "
                                 (pr-str {:type (first (keys (get backends role)))}) ", or {:type :memory} to keep "
                                 role " in memory (HERALD_MEMORY_ROLES=" (name role) " does that)")))
  (when-not (map? config) (invalid! [role] config "a map with a :type"))
  (let [t (:type config)
        known (cons :memory (keys (get backends role)))]
    (when-not (some #{t} known)
      (invalid! [role :type] t (str "one of " (pr-str (vec known)))))
    (when (= :memory t)
      (doseq [k (keys (dissoc config :type)) :when (not (contains? (memory-options role) k))]
        (invalid! [role k] (get config k) (str "absent: " role " in memory takes "
                                               (if (seq (memory-options role))
                                                 (str "only " (pr-str (vec (sort (memory-options role)))))
                                                 "no options")))))
    t))

(defn check-config!
  "Throws ex-info {:type :herald.feed.store/invalid :key path} naming the first key of the :scale store `config`
  (without :type) that is neither a role nor one of `options`, then the first role left out or misconfigured
  (see `role-type`). Returns config."
  [config options]
  (when-not (map? config) (invalid! [] config "a map of roles"))
  (doseq [k (keys config) :when (not (or (some #{k} role-keys) (contains? options k) (= :type k)))]
    (throw (ex-info (str "store config " (pr-str [k]) " is not a key of the :scale store"
                         (did-you-mean k role-keys) ": its roles are " (pr-str role-keys)
                         (when (seq options) (str ", its options " (pr-str (vec (sort options))))))
                    {:type :herald.feed.store/invalid :key [k] :value (get config k)})))
  (doseq [r role-keys] (role-type r (get config r)))
  config)

(defn- close-quietly [x]
  (when (satisfies? lifecycle/Lifecycle x)
    (try (lifecycle/-close! x) (catch Throwable _ nil))))

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
  "The Cache for config: nil (no cache) for {:type :memory :max-size 0}, Caffeine for {:type :memory}, else the
  backend."
  [config]
  (let [t (role-type :cache config)
        opts (dissoc config :type)]
    (cond (and (= :memory t) (= 0 (:max-size opts))) nil
          (= :memory t) (cache/caffeine-cache opts)
          :else (open-role :cache config nil))))

(defn open-roles
  "{:graph :feeds :search :cache :memory} opened from config (the :cache nil when disabled, :memory the shared
  memory store or nil). The config is checked (`check-config!`, against `options`, by default `scale-options`)
  before any role is opened; on a failure, the ones opened are closed."
  ([config] (open-roles config scale-options))
  ([config options]
   (check-config! config options)
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
         (throw t))))))
