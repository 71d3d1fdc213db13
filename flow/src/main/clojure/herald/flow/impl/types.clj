(ns herald.flow.impl.types
  "Shared helpers of validation and the runtime: the invalid-job error, fn references, durations."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defn invalid-ex
  "The `:herald.flow/invalid-job` ex-info naming `key` and `value` at `path`, with a fix `hint`."
  [path key value problem hint cause]
  (ex-info (str "Invalid job: " (pr-str key) " " (pr-str value)
                (when (seq path) (str " at " (pr-str path))) " " problem ". Fix: " hint)
           {:type :herald.flow/invalid-job :path path :key key :value value :problem problem :hint hint}
           cause))

(defn invalid!
  "Throws `invalid-ex`."
  ([path key value problem hint] (invalid! path key value problem hint nil))
  ([path key value problem hint cause] (throw (invalid-ex path key value problem hint cause))))

(defn resolve-fn
  "The fn a namespaced keyword names (`:my.ns/f` -> `my.ns/f`), loading its namespace; nil when it cannot."
  [kw]
  (when (qualified-keyword? kw)
    (try (let [v (requiring-resolve (symbol (namespace kw) (name kw)))]
           (some-> v deref))
         (catch Exception _ nil))))

(defn fn-ref!
  "The fn `kw` names at `path`/`key`, or an invalid-job error. `want` is :fn (callable) or :map."
  ([path key kw] (fn-ref! path key kw :fn))
  ([path key kw want]
   (when-not (qualified-keyword? kw)
     (invalid! path key kw "is not a namespaced keyword" "name the fn as :my.ns/my-fn"))
   (let [x (resolve-fn kw)]
     (cond (nil? x) (invalid! path key kw "cannot be resolved"
                              (str "define " (symbol (namespace kw) (name kw)) " in a namespace on the classpath"))
           (and (= want :map) (not (map? x))) (invalid! path key kw "does not name a map" "point it at a var holding a map")
           (and (= want :fn) (not (ifn? x))) (invalid! path key kw "does not name a fn" "point it at a defn")
           :else x))))

(def ^:private unit-ms
  {:ms 1 :millisecond 1 :milliseconds 1 :second 1000 :seconds 1000 :minute 60000 :minutes 60000
   :hour 3600000 :hours 3600000 :day 86400000 :days 86400000})

(defn duration?
  "True for a duration: non-negative milliseconds or `[n unit]`."
  [x]
  (or (nat-int? x)
      (and (vector? x) (= 2 (count x)) (nat-int? (first x)) (contains? unit-ms (second x)))))

(defn duration-ms
  "Milliseconds of a duration (see `duration?`)."
  ^long [x]
  (if (vector? x) (* (long (first x)) (long (unit-ms (second x)))) (long x)))

(def ^:private type-words
  "Human words for every type of the model (`herald.flow.impl.model`), one table for all error messages."
  {:keyword "a keyword" :fn "a namespaced keyword naming a fn" :pos-int "a positive integer"
   :nat-int "a non-negative integer" :retries "a non-negative integer or :forever" :long "an integer" :boolean "true or false" :string "a string"
   :vector "a vector" :map "a map" :any "any value" :enum "one of the listed keywords"
   :duration "milliseconds or [n unit]" :group-key "a keyword or a vector of keywords"
   :edges "a vector of [from to] edges" :catalog "a vector of task maps"
   :task "a task name (a keyword)" :window "a window id (a keyword)" :task-or-all "a task name or :all"
   :targets "a vector of task names, :all or :none"
   :predicate "a namespaced keyword naming a predicate, or [:and ...], [:or ...], [:not p]"
   :calls "a namespaced keyword naming a map of lifecycle hooks" :hook "a fn of (event lifecycle)"
   :aggregation "a built-in aggregation or a namespaced keyword naming an aggregation map"
   :agg-fn "a fn" :serde ":edn, :codec or a namespaced keyword naming a Serde"
   :path "a directory path (string or File)" :live-fn "a fn"
   :inject "a map of task name to a map of task keys" :config "a map with string or keyword keys"})

(defn describe-type
  "Human words for a model type (or its `one-of` values), used in error messages."
  [t one-of]
  (if one-of
    (str "one of " (str/join ", " (map pr-str one-of)))
    (get type-words t (name t))))

(defn- distance
  "Levenshtein distance between two strings."
  ^long [^String a ^String b]
  (let [n (.length b)]
    (loop [i 0 prev (vec (range (inc n)))]
      (if (= i (.length a))
        (long (peek prev))
        (recur (inc i)
               (reduce (fn [row j]
                         (conj row (min (inc (long (peek row))) (inc (long (nth prev (inc j))))
                                        (+ (long (nth prev j)) (if (= (.charAt a i) (.charAt b j)) 0 1)))))
                       [(inc i)] (range n)))))))

(defn closest
  "The candidate keyword nearest to `k` by spelling, when it is near enough to be a likely typo."
  [k candidates]
  (let [s (str k)
        [d best] (first (sort-by first (map (fn [c] [(distance s (str c)) c]) candidates)))]
    (when (and best (<= (long d) (max 2 (quot (count s) 5)))) best)))
