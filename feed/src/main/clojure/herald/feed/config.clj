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
             (get choices profile (get choices :default)))
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
  "Merges maps recursively; later values win, nil values in later maps are ignored."
  [& ms]
  (apply merge-with
         (fn [a b] (cond (and (map? a) (map? b)) (deep-merge a b)
                         (nil? b) a
                         :else b))
         ms))

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
   (let [text (if text? source (slurp (or (when (string? source) (io/resource source)) source)))
         raw (try (edn/read-string {:readers readers} text)
                  (catch clojure.lang.ExceptionInfo e (throw e))
                  (catch Exception e
                    (throw (ex-info (str "config is not valid EDN: " (.getMessage e))
                                    {:type :herald.feed/config} e))))
         _ (when-not (map? raw)
             (throw (ex-info "config must be an EDN map" {:type :herald.feed/config})))
         file-profile (resolve-tags (:profile raw) nil env)
         active (keyword (or profile file-profile :embedded))
         _ (check-profile! active raw)]
     (-> (resolve-tags (dissoc raw :profile) active env)
         resolve-refs
         (assoc :profile active)))))

(defn load-config
  "Reads the bundled `herald/feed/config.edn` (or `path` when given) for `opts` (see `read-config`),
  then deep-merges `overrides` (a map, e.g. from a test or the command line) on top."
  ([] (load-config nil {} nil))
  ([path opts overrides]
   (let [source (if path (io/file path) (io/resource "herald/feed/config.edn"))]
     (when (and path (not (.exists (io/file path))))
       (throw (ex-info (str "config file " path " does not exist") {:type :herald.feed/config :path path})))
     (deep-merge (read-config source opts) overrides))))
