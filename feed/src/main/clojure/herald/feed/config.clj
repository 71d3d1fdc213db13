(ns herald.feed.config
  "Reads the feed's EDN configuration: profiles, #env overrides and #ref links, with clojure.edn only."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.walk :as walk]))

(set! *warn-on-reflection* true)

;; Tagged literals are read into marker records first, then resolved in a second pass once the
;; active profile and the environment are known. Reading never runs code (no load-file, no eval).

(defrecord EnvRef [var-name default])
(defrecord ProfileChoice [choices])
(defrecord Ref [path])

(defn- read-env [form]
  (cond (symbol? form) (->EnvRef (str form) nil)
        (string? form) (->EnvRef form nil)
        (and (vector? form) (= 2 (count form)) ((some-fn symbol? string?) (first form)))
        (->EnvRef (str (first form)) (second form))
        :else (throw (ex-info (str "#env takes NAME or [NAME default], got " (pr-str form))
                              {:type :herald.feed/config :tag "#env" :form form}))))

(defn- read-profile [form]
  (when-not (map? form)
    (throw (ex-info (str "#profile takes a map of profile -> value, got " (pr-str form))
                    {:type :herald.feed/config :tag "#profile" :form form})))
  (->ProfileChoice form))

(defn- read-ref [form]
  (when-not (and (vector? form) (seq form))
    (throw (ex-info (str "#ref takes a vector path, got " (pr-str form))
                    {:type :herald.feed/config :tag "#ref" :form form})))
  (->Ref form))

(def ^:private readers {'env read-env 'profile read-profile 'ref read-ref})

(defn- coerce
  "Turns the environment string `s` into the type of `default` (long, double, boolean, keyword; a vector default
  takes a comma-separated list of strings)."
  [var-name s default]
  (try
    (cond (nil? default) s
          (integer? default) (Long/parseLong (str/trim s))
          (float? default) (Double/parseDouble (str/trim s))
          (boolean? default) (case (str/lower-case (str/trim s))
                               ("true" "1" "yes" "on") true
                               ("false" "0" "no" "off") false)
          (keyword? default) (keyword (str/replace (str/trim s) #"^:" ""))
          (vector? default) (into [] (comp (map str/trim) (remove str/blank?)) (str/split s #","))
          :else s)
    (catch Exception e
      (throw (ex-info (str "environment variable " var-name "=" (pr-str s)
                           " is not a valid " (.getSimpleName (class default)))
                      {:type :herald.feed/config :env var-name :value s} e)))))

(defn- resolve-tags [x profile env]
  (walk/prewalk
   (fn [v]
     (cond (instance? EnvRef v)
           (let [{:keys [var-name default]} v
                 s (get env var-name)]
             (if (str/blank? s) default (coerce var-name s default)))
           (instance? ProfileChoice v)
           (let [choices (:choices v)]
             ;; the choice may hold tags itself (#profile {:scale #env [X true] ...}): resolved too
             (resolve-tags (get choices profile (get choices :default)) profile env))
           :else v))
   x))

(defn- known-profiles
  "The profiles the config's #profile choices name (without :default), sorted."
  [raw]
  (let [acc (volatile! (sorted-set))]
    (walk/postwalk (fn [v] (when (instance? ProfileChoice v)
                             (vswap! acc into (remove #{:default}) (keys (:choices v))))
                     v)
                   raw)
    @acc))

(defn- check-profile!
  "Throws naming :profile when `active` is not one of the profiles the config names."
  [active raw]
  (let [known (known-profiles raw)]
    (when (and (seq known) (not (contains? known active)))
      (throw (ex-info (str "unknown profile " (name active) ": use "
                           (let [ns (mapv name known)]
                             (if (next ns) (str (str/join ", " (pop ns)) " or " (peek ns)) (first ns)))
                           " (--profile or HERALD_PROFILE)")
                      {:type :herald.feed/config :key :profile :value active})))))

(defn- resolve-refs [config]
  (letfn [(deref-path [path seen]
            (when (seen path)
              (throw (ex-info (str "#ref cycle through " (pr-str path))
                              {:type :herald.feed/config :ref path})))
            (let [v (get-in config path ::missing)]
              (cond (= ::missing v)
                    (throw (ex-info (str "#ref " (pr-str path) " points at nothing")
                                    {:type :herald.feed/config :ref path}))
                    (instance? Ref v) (deref-path (:path v) (conj seen path))
                    :else v)))]
    (walk/prewalk #(if (instance? Ref %) (deref-path (:path %) #{}) %) config)))

(defn check-one-of!
  "Returns `v` when it is one of `allowed`; else throws ex-info {:type :herald.feed/config :key path
  :value v} whose message names the key path (e.g. [:fanout :runtime]) and the choices."
  [path v allowed]
  (if (some #{v} allowed)
    v
    (throw (ex-info (str (str/join " " (map pr-str path)) " must be one of " (str/join ", " (map pr-str allowed))
                         ", got " (pr-str v))
                    {:type :herald.feed/config :key path :value v}))))

(defn deep-merge
  "Merges maps recursively; later values win, nil values in later maps are ignored. A map that names another
  `:type` than the map it lands on replaces it whole: a backend's options are not another backend's
  (`{:search {:type :memory}}` over `{:search {:type :opensearch :url ..}}` is `{:search {:type :memory}}`)."
  [& ms]
  (apply merge-with
         (fn [a b] (cond (and (map? a) (map? b))
                         (if (and (contains? b :type) (not= (:type a) (:type b))) b (deep-merge a b))
                         (nil? b) a
                         :else b))
         ms))

(defn- read-raw [source text?]
  (let [text (if text? source (slurp (or (when (string? source) (io/resource source)) source)))
        raw (try (edn/read-string {:readers readers} text)
                 (catch clojure.lang.ExceptionInfo e (throw e))
                 (catch Exception e
                   (throw (ex-info (str "config is not valid EDN: " (.getMessage e))
                                   {:type :herald.feed/config} e))))]
    (when-not (map? raw)
      (throw (ex-info "config must be an EDN map" {:type :herald.feed/config})))
    raw))

(defn read-config
  "Reads an EDN config from `source` (anything clojure.java.io/reader takes, or a string of EDN
  when `:string?`) and resolves its tags.

  | key        | type    | default           | meaning |
  |------------|---------|-------------------|---------|
  | `:profile` | keyword | from the file's `:profile` key (itself usually `#env [HERALD_PROFILE ...]`) | the active profile `#profile` picks |
  | `:env`     | map     | `(System/getenv)` | environment variables, name -> string (tests pass their own) |
  | `:string?` | boolean | false             | `source` is EDN text rather than a resource/file |

  Tags: `#env NAME` (string or nil), `#env [NAME default]` (coerced to the default's type; a vector default
  takes a comma-separated list: `#env [HOSTS [\"a:1\"]]` with HOSTS=a:1,b:2 gives [\"a:1\" \"b:2\"]),
  `#profile {:embedded x :memory y :default z}`, `#ref [:path :to :value]`. A profile that no
  `#profile` map names is an ex-info naming `:profile`."
  ([source] (read-config source {}))
  ([source {:keys [profile env] text? :string? :or {env (System/getenv)}}]
   (let [raw (read-raw source text?)
         file-profile (resolve-tags (:profile raw) nil env)
         active (keyword (or profile file-profile :embedded))
         _ (check-profile! active raw)]
     (-> (resolve-tags (dissoc raw :profile) active env)
         resolve-refs
         (assoc :profile active)))))

(defn read-overlay
  "Reads the overlay EDN file `path` for the active `profile`: a map deep-merged over the config (see
  `deep-merge`), with the same tags (`#ref` paths point into the overlay). It holds only what it changes, in
  the keys of the resolved config (`{:store {:search {:type :memory}}}`); it cannot set `:profile`."
  [path profile env]
  (when-not (.isFile (io/file path))
    (throw (ex-info (str "config overlay " path " does not exist") {:type :herald.feed/config :key :overlay :path path})))
  (let [raw (try (read-raw (io/file path) false)
                 (catch clojure.lang.ExceptionInfo e
                   (throw (ex-info (str "config overlay " path ": " (ex-message e))
                                   (assoc (ex-data e) :key :overlay :path path) e))))]
    (when (contains? raw :profile)
      (throw (ex-info (str "config overlay " path " sets :profile: choose the profile with --profile or HERALD_PROFILE")
                      {:type :herald.feed/config :key :profile :path path})))
    (resolve-refs (resolve-tags raw profile env))))

(def roles
  "The roles of the :scale store, as HERALD_MEMORY_ROLES names them."
  {"graph" :graph "feeds" :feeds "search" :search "cache" :cache})

(defn memory-roles
  "`config` with the roles named in `spec` (HERALD_MEMORY_ROLES: comma-separated, e.g. \"search,cache\") put in
  memory, `{:type :memory}` each. An unknown role, or a store that is not :scale, throws naming it."
  [config spec]
  (let [names (remove str/blank? (map str/trim (str/split (str spec) #",")))]
    (when (and (seq names) (not= :scale (get-in config [:store :type])))
      (throw (ex-info (str "HERALD_MEMORY_ROLES=" spec " applies to the :scale store's roles, but the store is "
                           (pr-str (get-in config [:store :type])) " (profile " (some-> (:profile config) name) ")")
                      {:type :herald.feed/config :key :memory-roles :env "HERALD_MEMORY_ROLES" :value spec})))
    (reduce (fn [c n]
              (if-let [r (get roles (str/lower-case n))]
                (assoc-in c [:store r] {:type :memory})
                (throw (ex-info (str "HERALD_MEMORY_ROLES names an unknown role " (pr-str n) ": use "
                                     (str/join ", " (sort (keys roles))))
                                {:type :herald.feed/config :key :memory-roles :env "HERALD_MEMORY_ROLES" :value n}))))
            config names)))

(defn load-config
  "Reads the bundled `herald/feed/config.edn` (or `path` when given) for `opts` (see `read-config`), then
  deep-merges over it, in order: the overlay file named by the environment's HERALD_CONFIG_OVERLAY (see
  `read-overlay`; the command line's --config-overlay sets it), `overrides` (a map, e.g. from a test or the
  command line), and the roles HERALD_MEMORY_ROLES puts in memory (see `memory-roles`)."
  ([] (load-config nil {} nil))
  ([path opts overrides]
   (let [source (if path (io/file path) (io/resource "herald/feed/config.edn"))
         env (:env opts (System/getenv))]
     ;; a directory passes .exists and then fails in slurp with a stack trace instead of this message
     (when (and path (not (.isFile (io/file path))))
       (throw (ex-info (str "config file " path (if (.exists (io/file path)) " is not a file" " does not exist"))
                       {:type :herald.feed/config :path path})))
     (let [base (read-config source (assoc opts :env env))
           overlay (when-let [p (not-empty (str/trim (str (get env "HERALD_CONFIG_OVERLAY"))))]
                     (read-overlay p (:profile base) env))]
       (cond-> (deep-merge base overlay overrides)
         (not (str/blank? (get env "HERALD_MEMORY_ROLES"))) (memory-roles (get env "HERALD_MEMORY_ROLES")))))))
