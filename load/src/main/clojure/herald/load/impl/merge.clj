(ns herald.load.impl.merge
  "One result from the results of generators that ran side by side against one target: histograms merged
  exactly (HdrHistogram addition), counts, errors, statuses and rates summed, steps merged by position."
  (:require [clojure.string :as str]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.report :as report]))

(set! *warn-on-reflection* true)

(defn- merge-steps
  "Steps of side-by-side runs with the same schedule, merged by position: histograms added exactly,
  counts, targets and achieved rates summed."
  [step-lists]
  (when (and (seq step-lists) (every? seq step-lists) (apply = (map count step-lists)))
    (vec (apply map (fn [& ss]
                      (let [h (fn [k] (hist/merge-histograms (map #(hist/decode (get-in % [:histograms k])) ss)))
                            lat (h :latency) svc (h :service)
                            sum (fn [k] (reduce + (map k ss)))]
                        (assoc (first ss)
                               :target-rate (sum :target-rate) :achieved (sum :achieved) :throughput (sum :throughput) :planned (sum :planned)
                               :sent (sum :sent) :requests (sum :requests) :unsent (sum :unsent) :late-sends (sum :late-sends)
                               :in-flight (sum :in-flight) :connection-waits (sum :connection-waits)
                               :errors (apply merge-with + (map :errors ss))
                               :latency (hist/summary lat) :service (hist/summary svc)
                               :histograms {:latency (hist/encode lat) :service (hist/encode svc)}
                               :warnings (vec (mapcat :warnings ss)))))
                step-lists))))

(defn merge-results
  "One result from results of generators that ran side by side against the same target (same mode):
  histograms are merged exactly, counts, errors, statuses and rates summed; intervals are summed by
  position (counts and rates; their percentiles are each generator's worst); per-minute rows keep their
  counts summed and the worst percentiles; steps of the same schedule are merged by position like the
  whole run. :merged-from lists the inputs' labels."
  [results]
  (let [merged (fn [k] (some->> (keep #(get-in % [:histograms k]) results) seq (map hist/decode) hist/merge-histograms))
        lat (merged :latency) svc (merged :service)
        sum-in (fn [path] (reduce + 0 (keep #(get-in % path) results)))
        worst (fn [ms] (when (seq ms) (apply merge-with (fn [a b] (if (and (number? a) (number? b)) (max a b) a)) ms)))]
    (cond-> (assoc (first results)
                   :label (str/join "+" (map report/label results))
                   :merged-from (mapv report/label results)
                   :requests (sum-in [:requests])
                   :rate {:target (when (some #(get-in % [:rate :target]) results) (double (sum-in [:rate :target])))
                          :achieved (double (sum-in [:rate :achieved]))}
                   :connections (sum-in [:connections])
                   :errors (apply merge-with + (map :errors results))
                   :status (apply merge-with + (map :status results))
                   :backlog (sum-in [:backlog])
                   :warnings (vec (mapcat :warnings results))
                   :intervals (vec (apply map (fn [& is] (assoc (first is) :count (reduce + (map :count is))
                                                                :rate (reduce + (map :rate is)) :errors (reduce + (map :errors is))
                                                                :latency (worst (map :latency is))))
                                          (map :intervals results)))
                   :per-minute (->> (mapcat :per-minute results)
                                    (group-by (juxt :minute-ms :entity :operation))
                                    (map (fn [[_ rows]] (assoc (worst rows) :count (reduce + (map :count rows)))))
                                    (sort-by (juxt :minute-ms :entity :operation)) vec)
                   :steps (merge-steps (map :steps results)))
      lat (assoc :latency (hist/summary lat) :histograms {:latency (hist/encode lat)})
      svc (-> (assoc :service (hist/summary svc)) (assoc-in [:histograms :service] (hist/encode svc))))))
