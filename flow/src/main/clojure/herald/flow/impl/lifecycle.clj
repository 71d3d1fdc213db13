(ns herald.flow.impl.lifecycle
  "Lifecycle hooks: the calls maps of a job's :lifecycles, per task, called with the thread's event map."
  (:require [herald.flow.impl.types :as t]))

(set! *warn-on-reflection* true)

(defn compile-lifecycles
  "Vector of [lifecycle calls-map] for the job."
  [job]
  (mapv (fn [lc] [lc (t/resolve-fn (:lifecycle/calls lc))]) (:lifecycles job)))

(defn hook
  "A fn `(f event-volatile extra)` calling hook `k` of every lifecycle of task `tname` with the event
  (merged with `extra`) and merging the maps they return into the event; nil when there is none."
  [lifecycles tname k]
  (let [hs (vec (for [[lc calls] lifecycles
                      :when (#{tname :all} (:lifecycle/task lc))
                      :let [f (get calls k)] :when f]
                  [lc f]))]
    (when (seq hs)
      (fn [ev extra]
        (doseq [[lc f] hs]
          (let [r (f (merge @ev extra) lc)]
            (when (map? r) (vswap! ev merge r))))))))

(defn handle-exception
  "The action the :lifecycle/handle-exception hooks of the tasks `tnames` (one thread's fused tasks) choose
  for exception `e` in `phase` (:kill when none)."
  [lifecycles tnames ev phase e]
  (or (some (fn [[lc calls]]
              (when-let [f (and (or (= :all (:lifecycle/task lc)) (some #{(:lifecycle/task lc)} tnames))
                                (:lifecycle/handle-exception calls))]
                (let [a (f @ev lc phase e)] (when (not= a :defer) a))))
            lifecycles)
      :kill))
