(ns herald.load.impl.result-json
  "herald-load's results and progress lines as JSON (summary.json, steps.json, --progress json, the lab's summary):
  herald.json with the conventions those files have always had: keys by name (`:herald.load/result` -> \"result\"),
  non-finite numbers as null, values JSON has no type for as their string."
  (:require [herald.json :as json]))

(set! *warn-on-reflection* true)

(defn- key-name ^String [k] (if (keyword? k) (name k) (str k)))

(defn- plain
  "`x` with non-finite doubles as nil and values herald.json would refuse as strings."
  [x]
  (cond (map? x) (persistent! (reduce-kv (fn [m k v] (assoc! m k (plain v))) (transient {}) x))
        (or (sequential? x) (set? x)) (mapv plain x)
        (float? x) (let [d (double x)] (when-not (or (Double/isNaN d) (Double/isInfinite d)) x))
        (or (nil? x) (string? x) (keyword? x) (boolean? x) (number? x) (symbol? x)) x
        :else (str x)))

(defn write-str
  "`x` as a JSON String, with herald-load's conventions (see the namespace)."
  ^String [x]
  (json/write-str (plain x) {:key-fn key-name}))
