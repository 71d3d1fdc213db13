(ns herald.load.impl.sweep
  "Finds the wall: one rate run whose schedule steps through a series of rates (fractions of a measured or
  given maximum) on the same connections, stopping after consecutive failing steps, and reports the highest
  rate whose p99 and p99.9 stay under their bounds with the target rate achieved and no errors."
  (:require [clojure.string :as str]
            [herald.load.impl.options :as options]
            [herald.load.impl.run :as run]
            [herald.load.impl.schedule :as schedule]
            [herald.load.impl.steps :as steps]))

(set! *warn-on-reflection* true)

(def default-fractions
  "Fractions of the maximum rate a sweep tries, in order."
  [0.1 0.25 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.25 1.5])

(defn step-ok?
  "True when a rate run (or a step viewed as one, see `as-run`) met its target rate (within 1%), had no
  errors, and stayed under the bounds (ms)."
  [r p99-bound p999-bound]
  (let [{:keys [target achieved]} (:rate r)
        {:keys [p99 p999]} (:latency r)]
    (boolean (and p99 p999 (>= achieved (* 0.99 target))
                  (zero? (reduce + (vals (:errors r))))
                  (<= p99 p99-bound) (<= p999 p999-bound)))))

(defn as-run
  "A step map of a scheduled run in the shape `step-ok?` reads."
  [s]
  {:rate {:target (:target-rate s) :achieved (:achieved s)} :latency (:latency s) :errors (:errors s)})

(defn wall
  "The highest target rate below the first failing step among `steps` (maps with :rate and :ok?, in order):
  every step up to it passed. nil when the first step failed."
  [steps]
  (some->> (seq (take-while :ok? steps)) (map :rate) (apply max)))

(defn highest-passed
  "The highest target rate among `steps` that passed, failing steps below it or not; nil when none passed."
  [steps]
  (some->> (seq (filter :ok? steps)) (map :rate) (apply max)))

(defn- rate-label [rate] (schedule/phase-label {:rate rate}))

(defn non-monotone-warning
  "A warning when a step passed above a failing one (the wall then depends on noise), else nil. It names
  the failed lower steps and says why the wall is what it is: none when the first step failed, else the
  highest rate below the first failing step."
  [steps]
  (let [w (wall steps) hp (highest-passed steps)]
    (when (and hp (not= w hp))
      (let [failed (map :rate (remove :ok? (filter #(< (double (:rate %)) (double hp)) steps)))]
        (format "NON-MONOTONE: %d step(s) below %s failed the bound (%s failed) while %s passed; the wall is %s: repeat with a longer -d"
                (count failed) (rate-label hp) (str/join ", " (map rate-label failed)) (rate-label hp)
                (if w (str (rate-label w) " (every step up to it passed)") "none (the first step failed)"))))))

(defn- sweep-step [s ok?]
  {:rate (get-in s [:target :rate]) :achieved (:achieved s) :p99 (get-in s [:latency :p99])
   :p999 (get-in s [:latency :p999]) :errors (reduce + (vals (:errors s))) :ok? ok?})

(defn- verdict
  "The verdict on live step `s` once it is known: :ok or :fail when settled; :fail before that when it
  already failed for sure (errors, or more than 1% of its requests still unanswered longer than the p99
  bound after the step ended); nil while unknown."
  [s p99-bound p999-bound]
  (cond (:settled? s) (if (step-ok? (as-run s) p99-bound p999-bound) :ok :fail)
        (pos? (reduce + (vals (:errors s)))) :fail
        (and (> (* 1000.0 (double (:since-end-s s))) (double p99-bound))
             (> (steps/unfinished s) (* 0.01 (double (:planned s))))) :fail))

(defn- stopper
  "The run's stop? fn: decides steps in order, tells `on-step`, and stops after `stop-after` failures in a row."
  [p99-bound p999-bound stop-after on-step]
  (let [state (atom {:decided 0 :failures 0})]
    (fn [live]
      (loop []
        (let [{:keys [decided failures]} @state
              s (get live decided)
              v (when s (verdict s p99-bound p999-bound))]
          (if (and v (< failures stop-after))
            (do (when on-step (on-step (sweep-step s (= v :ok))))
                (swap! state assoc :decided (inc decided) :failures (if (= v :ok) 0 (inc failures)))
                (recur))
            (>= failures stop-after)))))))

(defn- final-steps
  "The sweep's steps from the run's (complete ones, in order, up to the failure that stopped it)."
  [step-list p99-bound p999-bound stop-after]
  (loop [[s & more] (filter :complete? step-list) out [] failures 0]
    (if (or (nil? s) (>= failures stop-after))
      out
      (let [ok? (step-ok? (as-run s) p99-bound p999-bound)]
        (recur more (conj out (sweep-step s ok?)) (if ok? 0 (inc failures)))))))

(defn execute
  "Runs a sweep (see herald.load/sweep for the options); returns {:mode :sweep :max-rate :steps :wall
  :highest-passed :warnings :runs :run}."
  [opts]
  (let [opts (options/validate :sweep opts)
        _ (options/check opts :p99-bound #(and (number? %) (pos? (double %))) "must be a positive number of ms")
        _ (options/check opts :stop-after-failures #(or (nil? %) (and (integer? %) (pos? (long %)))) "must be a positive integer")
        p99-bound (:p99-bound opts)
        p999-bound (or (:p999-bound opts) (* 2.0 (double p99-bound)))
        run-opts (dissoc opts :max-rate :fractions :rates :p99-bound :p999-bound :stop-after-failures :on-step :rate :schedule)
        max-run (when-not (or (:max-rate opts) (:rates opts)) (run/execute :max run-opts))
        max-rate (or (:max-rate opts) (some-> max-run :rate :achieved))
        rates (or (:rates opts) (mapv #(max 1 (Math/round (* (double %) (double max-rate)))) (or (:fractions opts) default-fractions)))
        _ (options/check {:rates rates} :rates #(and (sequential? %) (seq %) (every? number? %)) "must be a non-empty list of rates")
        stop-after (or (:stop-after-failures opts) 2)
        r (run/execute :rate (assoc run-opts
                                    :schedule (mapv (fn [rate] {:rate rate :duration (:duration opts)}) rates)
                                    ::run/stop? (stopper p99-bound p999-bound stop-after (:on-step opts))))
        r (assoc r :label "steps")
        steps (final-steps (:steps r) p99-bound p999-bound stop-after)
        step-runs (take (count steps) (steps/step-results r))]
    {:herald.load/sweep 1 :mode :sweep :max-rate max-rate :p99-bound p99-bound :p999-bound p999-bound
     :steps steps :wall (wall steps) :highest-passed (highest-passed steps)
     :warnings (vec (keep identity [(non-monotone-warning steps)]))
     :runs (vec (cond->> step-runs max-run (cons (assoc max-run :label "max"))))
     :run r}))
