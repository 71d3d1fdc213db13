(ns herald.load.impl.options
  "Defaults and validation of the option maps of every mode; a bad option is an ex-info naming the key."
  (:require [clojure.string :as str]
            [herald.load.impl.schedule :as schedule]))

(set! *warn-on-reflection* true)

(defn- cores [] (.availableProcessors (Runtime/getRuntime)))

(def engine-defaults
  "Defaults shared by the rate, max and sweep modes."
  {:method :get :headers {} :connections 16 :duration 10 :warmup 0 :timeout 10
   :new-connection? false :progress :auto :interval 1.0 :handle-interrupt? false})

(defn- fail [k v why]
  (throw (ex-info (str "bad option " k " = " (pr-str v) ": " why)
                  {:type :herald.load/bad-option :key k :value v})))

(defn check
  "Throws a :herald.load/bad-option ex-info unless (pred (k m)); returns m."
  [m k pred why]
  (let [v (get m k)]
    (when-not (try (pred v) (catch Exception _ false)) (fail k v why))
    m))

(defn- pos-num? [x] (and (number? x) (pos? (double x))))
(defn- nonneg-num? [x] (and (number? x) (not (neg? (double x)))))
(defn- positive-int? [x] (and (integer? x) (pos? (long x))))

(defn validate
  "Fills defaults into the options of `mode` (:rate, :max or :sweep) and checks them. In rate mode :phases
  is the validated schedule (herald.load.impl.schedule/normalize of :rate or :schedule)."
  [mode opts]
  (let [m (merge engine-defaults opts)
        m (update m :threads #(or % (max 1 (min (cores) (long (:connections m))))))]
    (-> m
        (check :url #(and (string? %) (re-find #"^https?://" %)) "must be an http:// or https:// URL string")
        (check :connections positive-int? "must be a positive integer")
        (check :threads positive-int? "must be a positive integer")
        (check :duration pos-num? "must be a positive number of seconds")
        (check :warmup nonneg-num? "must be a number of seconds >= 0")
        (check :timeout pos-num? "must be a positive number of seconds")
        (check :interval pos-num? "must be a positive number of seconds")
        (check :headers map? "must be a map of header name to value")
        (check :script #(or (nil? %) (ifn? %)) "must be a fn of the request number returning a request map")
        (check :progress #{:auto :text :json :quiet} "must be one of :auto :text :json :quiet")
        (check :on-interval #(or (nil? %) (ifn? %)) "must be a fn of an interval map")
        (check :on-step #(or (nil? %) (ifn? %)) "must be a fn of a step map")
        (check :on-send #(or (nil? %) (ifn? %)) "must be a fn of (request intended-ns sent-ns)")
        (cond-> (= mode :rate) (as-> v (assoc v :phases (schedule/normalize v)))))))
