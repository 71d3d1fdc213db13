(ns herald.load.impl.schedule
  "Rate schedules as data: constant steps and linear ramps run one after the other on the same connections.
  Parses the command line's text form, validates phases naming the one at fault, builds the engine's
  RateSchedule, and answers the target rate over any span of time."
  (:require [clojure.edn :as edn]
            [clojure.string :as str])
  (:import (herald.load.engine RateSchedule)))

(set! *warn-on-reflection* true)

(def max-phases
  "The most phases a schedule may have."
  1000)

(defn- bad [k v why & [extra]]
  (throw (ex-info (str "bad option " k " = " (pr-str v) ": " why)
                  (merge {:type :herald.load/bad-option :key k :value v} extra))))

(defn parse-seconds
  "\"10s\", \"500ms\", \"2m\", \"1h\" or a plain number of seconds, as seconds (a double)."
  [s]
  (let [[_ n unit] (re-matches #"([0-9]*\.?[0-9]+)\s*(ms|s|m|h)?" (str/trim (str s)))]
    (when-not n (throw (ex-info (str "bad duration: " s) {:type :herald.load/bad-option :value s})))
    (* (parse-double n) (case unit "ms" 0.001 "m" 60.0 "h" 3600.0 1.0))))

(def ^:private phase-re #"([0-9]*\.?[0-9]+)(?:\.\.([0-9]*\.?[0-9]+))?(?::(.+))?")

(defn parse-text
  "Phases from the command line's text: comma-separated `RATE[:TIME]` (a constant step) or
  `FROM..TO[:TIME]` (a linear ramp), e.g. \"1000:30s,2000:30s\" or \"1000..5000:60s\". A phase without a
  time lasts the run's :duration. `key` names the option in errors."
  ([s] (parse-text s :rate))
  ([s key]
   (vec (for [item (str/split (str/trim (str s)) #"\s*,\s*")]
          (let [[_ from to time] (or (re-matches phase-re item)
                                     (bad key s (str "phase " (pr-str item) " is not RATE[:TIME] or FROM..TO[:TIME]")))]
            (cond-> {:rate (parse-double from)}
              to (assoc :to (parse-double to))
              time (assoc :duration (try (parse-seconds time)
                                         (catch Exception _ (bad key s (str "bad time " (pr-str time) " in phase " (pr-str item))))))))))))

(defn- rate? [x] (and (number? x) (not (neg? (double x))) (Double/isFinite (double x))))

(defn- check-phase [i p]
  (let [fail (fn [why] (bad :schedule p (str "phase " i " " why) {:phase i}))]
    (when-not (map? p) (fail "must be a map {:rate R :duration S} or {:rate R :to R2 :duration S}"))
    (when-let [ks (seq (remove #{:rate :to :duration} (keys p)))] (fail (str "has unknown keys " (vec ks))))
    (when-not (rate? (:rate p)) (fail ":rate must be a number of requests/s >= 0"))
    (when-not (or (nil? (:to p)) (rate? (:to p))) (fail ":to must be a number of requests/s >= 0"))
    (when-not (pos? (+ (double (:rate p)) (double (or (:to p) (:rate p)))))
      (fail "must have a positive rate (a constant step above 0, or a ramp with one end above 0)"))
    (when-not (and (number? (:duration p)) (pos? (double (:duration p))) (Double/isFinite (double (:duration p))))
      (fail ":duration must be a positive number of seconds"))
    (cond-> {:rate (:rate p) :duration (:duration p)}
      (and (:to p) (not (== (:to p) (:rate p)))) (assoc :to (:to p)))))

(defn- read-schedule [s]
  (if (str/starts-with? (str/trim s) "[")
    (try (edn/read-string s) (catch Exception e (bad :schedule s (str "not EDN: " (ex-message e)))))
    (parse-text s :schedule)))

(defn normalize
  "The validated phases of rate-mode options: `:rate` (a number: one step of `:duration` seconds) or
  `:schedule` (a vector of phases {:rate R :duration S} or ramps {:rate R :to R2 :duration S}, or the
  command line's text form); a phase without :duration lasts `:duration`. Throws a
  :herald.load/bad-option ex-info naming :rate or :schedule (and the phase) when they are wrong."
  [{:keys [rate schedule duration]}]
  (when (and rate schedule) (bad :schedule schedule "give :rate or :schedule, not both"))
  (let [phases (cond schedule (if (string? schedule) (read-schedule schedule) schedule)
                     (number? rate) [{:rate rate}]
                     (string? rate) (parse-text rate :rate)
                     :else (bad :rate rate "must be a positive number of requests per second (or give :schedule)"))]
    (when (number? rate)
      (when-not (and (pos? (double rate)) (Double/isFinite (double rate))) (bad :rate rate "must be a positive number of requests per second")))
    (when-not (and (sequential? phases) (seq phases)) (bad :schedule schedule "must be a non-empty vector of phases"))
    (when (> (count phases) max-phases) (bad :schedule (count phases) (str "has more than " max-phases " phases")))
    (vec (map-indexed (fn [i p] (check-phase i (if (map? p) (update p :duration #(or % duration)) p))) phases))))

(defn total-seconds
  "The length of `phases` in seconds."
  [phases]
  (reduce + 0.0 (map (comp double :duration) phases)))

(defn warmup-phase
  "The warm-up phase before `phases`: `seconds` at the first phase's starting rate (its end rate if it starts at 0)."
  [phases seconds]
  (let [{:keys [rate to]} (first phases)]
    {:rate (if (pos? (double rate)) rate to) :duration seconds}))

(defn engine-schedule
  "The engine's RateSchedule of `phases`, preceded by a warm-up phase when `warmup` > 0 seconds."
  ^RateSchedule [phases warmup]
  (let [all (cond->> phases (pos? (double warmup)) (cons (warmup-phase phases warmup)))]
    (RateSchedule. (double-array (map (comp double :rate) all))
                   (double-array (map #(double (or (:to %) (:rate %))) all))
                   (double-array (map (comp double :duration) all)))))

(defn target-rate
  "The schedule's mean intended rate between `from-s` and `to-s` seconds after its start."
  [^RateSchedule s from-s to-s]
  (let [dt (- (double to-s) (double from-s))]
    (when (pos? dt)
      (/ (- (.cumulative s (double to-s)) (.cumulative s (double from-s))) dt))))

(defn mean-rate
  "The mean rate of a phase (a ramp's is the mid-point)."
  [{:keys [rate to]}]
  (/ (+ (double rate) (double (or to rate))) 2.0))

(defn- num-str [x] (let [d (double x)] (if (== d (Math/rint d)) (str (long d)) (str d))))

(defn phase-label
  "\"2000/s\" for a step, \"1000..5000/s\" for a ramp."
  [{:keys [rate to]}]
  (str (num-str rate) (when to (str ".." (num-str to))) "/s"))

(defn text
  "The command line's text form of `phases`."
  [phases]
  (str/join "," (for [{:keys [rate to duration]} phases]
                  (str (num-str rate) (when to (str ".." (num-str to))) ":" (num-str duration) "s"))))
