(ns herald.load.impl.sweep
  "Finds the wall: runs the rate mode at a series of rates (fractions of a measured or given maximum) and
  reports the highest rate whose p99 and p99.9 stay under their bounds with the target rate achieved."
  (:require [herald.load.impl.options :as options]
            [herald.load.impl.run :as run]))

(set! *warn-on-reflection* true)

(def default-fractions
  "Fractions of the maximum rate a sweep tries, in order."
  [0.1 0.25 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.25 1.5])

(defn step-ok?
  "True when a rate run met its target rate (within 1%), had no errors, and stayed under the bounds (ms)."
  [r p99-bound p999-bound]
  (let [{:keys [target achieved]} (:rate r)
        {:keys [p99 p999]} (:latency r)]
    (boolean (and p99 p999 (>= achieved (* 0.99 target))
                  (zero? (reduce + (vals (:errors r))))
                  (<= p99 p99-bound) (<= p999 p999-bound)))))

(defn wall
  "The highest target rate among `steps` (maps with :rate and :ok?) that passed, or nil."
  [steps]
  (some->> (seq (filter :ok? steps)) (map :rate) (apply max)))

(defn execute
  "Runs a sweep (see herald.load/sweep for the options); returns {:mode :sweep :max-rate :steps :wall :runs}."
  [opts]
  (let [opts (options/validate :sweep opts)
        _ (options/check opts :p99-bound #(and (number? %) (pos? (double %))) "must be a positive number of ms")
        p999-bound (or (:p999-bound opts) (* 2.0 (double (:p99-bound opts))))
        run-opts (dissoc opts :max-rate :fractions :rates :p99-bound :p999-bound :stop-after-failures :on-step)
        max-run (when-not (or (:max-rate opts) (:rates opts)) (run/execute :max run-opts))
        max-rate (or (:max-rate opts) (some-> max-run :rate :achieved))
        rates (or (:rates opts) (mapv #(Math/round (* (double %) (double max-rate))) (or (:fractions opts) default-fractions)))
        stop-after (or (:stop-after-failures opts) 2)]
    (loop [[rate & more] rates steps [] runs [] failures 0]
      (if (or (nil? rate) (>= failures stop-after))
        {:herald.load/sweep 1 :mode :sweep :max-rate max-rate :p99-bound (:p99-bound opts) :p999-bound p999-bound
         :steps steps :wall (wall steps) :runs (cond->> runs max-run (cons (assoc max-run :label "max")))}
        (let [r (assoc (run/execute :rate (assoc run-opts :rate rate)) :label (str "rate " rate "/s"))
              ok? (step-ok? r (:p99-bound opts) p999-bound)
              step {:rate rate :achieved (get-in r [:rate :achieved]) :p99 (get-in r [:latency :p99])
                    :p999 (get-in r [:latency :p999]) :errors (reduce + (vals (:errors r))) :ok? ok?}]
          (when-let [f (:on-step opts)] (f step))
          (recur more (conj steps step) (conj runs r) (if ok? 0 (inc failures))))))))
