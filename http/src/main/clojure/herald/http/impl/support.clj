(ns herald.http.impl.support
  "Shared by herald.http's middleware, router and OpenAPI builder: option checks and JSON error answers."
  (:require [herald.json :as json]))

(set! *warn-on-reflection* true)

(defn check-options!
  "Validates `opts` against `spec` (option key -> [pred description]); throws an ex-info
  `{:type :herald.http/invalid-option :key k :value v}` naming `who` and the first bad or unknown key."
  [who spec opts]
  (when-not (or (nil? opts) (map? opts))
    (throw (ex-info (str who " options must be a map, got " (pr-str opts))
                    {:type :herald.http/invalid-option :value opts})))
  (doseq [[k v] opts]
    (if-let [[pred desc] (get spec k)]
      (when-not (pred v)
        (throw (ex-info (str who " option " k " must be " desc ", got " (pr-str v))
                        {:type :herald.http/invalid-option :key k :value v})))
      (throw (ex-info (str who " has no option " k "; known options: " (sort (keys spec)))
                      {:type :herald.http/invalid-option :key k :value v}))))
  opts)

(defn pos-int-option? [x] (and (int? x) (pos? x)))

(def json-type "application/json; charset=utf-8")

(defn error-response
  "A JSON error response: `{\"error\": message}` with `status`."
  [status message]
  {:status status
   :headers {"Content-Type" json-type}
   :body (json/write-bytes {"error" message})})
