(ns herald.load.impl.agent-report
  "The figures of a distributed run: the agents' results merged exactly (HdrHistogram addition), merged
  intervals from the streamed interval histograms, per-agent figures, the warnings (an agent behind its
  share, stalled, dead or failed), the per-agent lines and the report's agents table."
  (:require [clojure.string :as str]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.merge :as merge]
            [herald.load.impl.report :as report]
            [herald.load.impl.schedule :as schedule])
  (:import (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(def behind-fraction
  "An agent whose achieved rate is below this fraction of its share's target is behind its share."
  0.99)

(defn share-target
  "The target rate (requests/s) of one share's options: its schedule's mean rate (rate mode), its rate
  cap (feed mode, nil without one)."
  [mode share]
  (case mode
    :rate (let [ps (:schedule share)]
            (/ (reduce + (map #(* (schedule/mean-rate %) (double (:duration %))) ps)) (schedule/total-seconds ps)))
    :feed (some-> (:rate-cap share) double)))

(defn total-target
  "The whole run's target rate from validated options, for progress lines (nil: a feed run without a cap)."
  [mode opts]
  (case mode
    :rate (share-target :rate {:schedule (:phases opts)})
    :feed (some-> (:rate-cap opts) double)))

(defn merged-interval
  "The progress entry of interval `i` over the agent records `recs` that sent it: counts summed,
  percentiles of the merged histograms."
  [recs i target]
  (let [xs (keep #(get (:intervals %) i) recs)
        h (hist/merge-histograms (map #(nth % 2) xs))
        start (apply min (map first xs)) end (apply max (map second xs))]
    {:t (/ (Math/round (* 1000.0 (double end))) 1000.0)
     :count (.getTotalCount h)
     :rate (/ (.getTotalCount h) (max 1e-9 (- (double end) (double start))))
     :target target
     :errors 0
     :latency (select-keys (hist/summary h) [:p50 :p90 :p99 :p999 :max])}))

(defn- r1 [x] (when x (/ (Math/round (* 10.0 (double x))) 10.0)))
(defn- r3 [x] (when x (/ (Math/round (* 1000.0 (double x))) 1000.0)))

(defn- stalled?
  "True when a rate share's p99 from the intended send time exceeds twice its service p99 plus 5 ms:
  requests waited to be sent, for want of a connection or of the agent's CPU."
  [r]
  (let [l (get-in r [:latency :p99]) s (get-in r [:service :p99])]
    (boolean (and (= :rate (:mode r)) l s (> (double l) (+ (* 2.0 (double s)) 5.0))))))

(defn- agent-figures [mode {:keys [name status reason share offset-ms rtt-ms start-skew-ms info intervals result]}]
  (let [target (share-target mode share)
        achieved (get-in result [:rate :achieved])
        streamed (reduce + 0 (map #(.getTotalCount ^Histogram (nth % 2)) intervals))]
    (cond-> {:name name :status (or status :died) :host (:host info) :cores (:cores info)
             :offset-ms (r3 offset-ms) :rtt-ms (r3 rtt-ms) :start-skew-ms (r3 start-skew-ms)
             :share (cond-> {:target-rate (r3 target)}
                      (= mode :rate) (assoc :connections (:connections share))
                      (= mode :feed) (assoc :users (:users share)))
             :intervals (count intervals) :streamed-requests streamed}
      reason (assoc :reason reason)
      result (assoc :requests (:requests result) :achieved (r1 achieved)
                    :achieved-pct (when (and target (pos? (double target))) (r1 (* 100.0 (/ (double achieved) (double target)))))
                    :errors (reduce + 0 (vals (:errors result)))
                    :latency (select-keys (:latency result) [:p50 :p99 :p999 :max])
                    :service-p99 (get-in result [:service :p99])
                    :behind? (boolean (and target (< (double achieved) (* behind-fraction (double target)))))
                    :stalled? (stalled? result)))))

(defn- share-text [mode a]
  (let [s (:share a)]
    (if (= mode :rate)
      (format "%.1f/s over %d connections" (double (:target-rate s)) (long (:connections s)))
      (str (:users s) " users" (when-let [t (:target-rate s)] (format " capped at %.1f/s" (double t)))))))

(defn- agent-warnings [mode a]
  (let [n (:name a)]
    (cond-> []
      (= :died (:status a))
      (conj (format "AGENT %s DIED: %s: its share (%s) is missing from these figures (%d responses had been streamed)"
                    n (:reason a) (share-text mode a) (long (:streamed-requests a))))
      (= :error (:status a))
      (conj (format "AGENT %s FAILED: %s: its share (%s) is missing from these figures" n (:reason a) (share-text mode a)))
      (:behind? a)
      (conj (format "AGENT %s FELL BEHIND ITS SHARE: achieved %.1f/s of its %.1f/s (%.1f%%)"
                    n (double (:achieved a)) (double (get-in a [:share :target-rate])) (double (:achieved-pct a))))
      (:stalled? a)
      (conj (format "AGENT %s STALLED: p99 from the intended send time %s ms against a service p99 of %s ms: requests waited to be sent (too few connections, or the agent's CPU or GC)"
                    n (get-in a [:latency :p99]) (:service-p99 a))))))

(defn- exact-intervals [recs target]
  (let [n (reduce max 0 (map #(count (:intervals %)) recs))]
    (mapv #(merged-interval recs % target) (range n))))

(defn- generator
  "The agents' generator figures together: threads and CPU seconds summed, CPU per request over them all."
  [results]
  (let [gs (keep :generator results)
        cpu (reduce + 0.0 (map #(double (:cpu-s % 0)) gs))
        n (reduce + 0 (map #(long (:requests % 0)) results))]
    (when (seq gs)
      {:threads (reduce + 0 (map #(long (:threads % 0)) gs)) :cpu-s cpu
       :cpu-us-per-request (when (pos? n) (/ (Math/round (/ (* cpu 1e6) n 0.01)) 100.0))
       :io-busy (into [] (mapcat :io-busy) gs)})))

(defn- merge-operations
  "Feed results' per-operation figures together: counts, statuses and errors summed; the latency
  percentiles (summaries only) are each agent's worst, :min the least."
  [results]
  (let [ops (keep :operations results)]
    (when (seq ops)
      (apply merge-with
             (fn [a b]
               {:latency (-> (merge-with (fn [x y] (if (and (number? x) (number? y)) (max x y) (or x y))) (:latency a) (:latency b))
                             (assoc :count (+ (long (get-in a [:latency :count] 0)) (long (get-in b [:latency :count] 0))))
                             (cond-> (and (get-in a [:latency :min]) (get-in b [:latency :min]))
                               (assoc :min (min (get-in a [:latency :min]) (get-in b [:latency :min])))))
                :status (merge-with + (:status a) (:status b))
                :errors (merge-with + (:errors a) (:errors b))})
             ops))))

(defn- run-options
  "The coordinator's options as data for the result's :meta (functions dropped, a JWT secret hidden)."
  [opts agents]
  (cond-> (into (sorted-map) (remove (comp fn? val)) (dissoc opts :phases))
    (:jwt-secret opts) (assoc :jwt-secret "(hidden)")
    true (assoc :agents (mapv :name agents))))

(defn result
  "The merged result of a distributed run from the agents' records (`state`, by name), in the order of
  `agents`; throws :herald.load/agents-failed when no agent returned a result."
  [mode opts agents state seconds]
  (let [recs (mapv #(get state (:name %)) agents)
        figures (mapv #(agent-figures mode %) recs)
        ok (filterv #(= :ok (:status %)) recs)
        results (mapv #(assoc (:result %) :label (str "agent " (:name %))) ok)
        target (some->> (keep #(get-in % [:share :target-rate]) figures) seq (reduce +))
        own (fn [r] (for [w (:warnings r) :when (not (re-find #"^ACHIEVED RATE" w))] (str (:label r) ": " w)))]
    (when (empty? results)
      (throw (ex-info (str "no agent returned a result: " (str/join "; " (for [a figures] (str (:name a) ": " (:reason a)))))
                      {:type :herald.load/agents-failed :agents figures})))
    (let [m (merge/merge-results results)
          achieved (double (get-in m [:rate :achieved]))]
      (with-meta
        (cond-> (assoc m
                       :label (str "merged (" (count results) " of " (count agents) " agents)")
                       :rate {:target target :achieved achieved}
                       :duration-s (or (:duration-s m) seconds)
                       :intervals (exact-intervals ok target)
                       :generator (generator results)
                       :meta (assoc (:meta m) :options (run-options opts agents))
                       :agents figures
                       :warnings (vec (concat (mapcat #(agent-warnings mode %) figures)
                                              (when (and target (< achieved (* behind-fraction (double target))))
                                                [(format "ACHIEVED RATE %.1f/s IS BELOW THE TARGET %.1f/s: an agent or the server fell short" achieved (double target))])
                                              (mapcat own results))))
          (some :operations results) (assoc :operations (merge-operations results)))
        {:agent-results results}))))

(defn failed?
  "True when an agent of result `r` died or failed."
  [r]
  (boolean (some #(not= :ok (:status %)) (:agents r))))

(defn agent-lines
  "One machine-readable line per agent of result `r`."
  [r]
  (for [a (:agents r) :let [l (:latency a)]]
    (str "herald-load agent=" (:name a) " status=" (name (:status a))
         " target_rps=" (or (some->> (get-in a [:share :target-rate]) double (format "%.1f")) "-")
         " achieved_rps=" (or (:achieved a) "-") " requests=" (or (:requests a) "-")
         " p50_ms=" (or (:p50 l) "-") " p99_ms=" (or (:p99 l) "-") " p999_ms=" (or (:p999 l) "-") " max_ms=" (or (:max l) "-")
         " service_p99_ms=" (or (:service-p99 a) "-") " offset_ms=" (:offset-ms a) " rtt_ms=" (:rtt-ms a)
         " start_skew_ms=" (or (:start-skew-ms a) "-") " behind=" (boolean (:behind? a)) " stalled=" (boolean (:stalled? a)))))

(defn- esc [s] (-> (str s) (str/replace "&" "&amp;") (str/replace "<" "&lt;") (str/replace ">" "&gt;")))

(defn agents-html
  "The report's agents table of result `r`."
  [r]
  (let [cols ["agent" "status" "share target/s" "connections/users" "achieved/s" "% of share" "requests" "p50" "p99" "p99.9" "max"
              "service p99" "clock offset ms" "rtt ms" "start skew ms" "note"]
        rows (for [a (:agents r) :let [l (:latency a) s (:share a)]]
               [(:name a) (name (:status a)) (:target-rate s) (or (:connections s) (:users s)) (:achieved a) (:achieved-pct a)
                (:requests a) (:p50 l) (:p99 l) (:p999 l) (:max l) (:service-p99 a) (:offset-ms a) (:rtt-ms a) (:start-skew-ms a)
                (str/join "; " (remove nil? [(:reason a) (when (:behind? a) "behind its share") (when (:stalled? a) "stalled")]))])]
    (str "<h2>Agents</h2>\n<p>Each agent ran its share from the same instant (clock offsets measured at connect); "
         "the merged figures add their histograms exactly. A dead agent's share is missing from them.</p>\n<table>\n<tr>"
         (str/join (map #(str "<th>" (esc %) "</th>") cols)) "</tr>\n"
         (str/join (for [row rows] (str "<tr>" (str/join (map #(str "<td>" (esc (if (nil? %) "-" %)) "</td>") row)) "</tr>\n")))
         "</table>\n")))

(defn html
  "The HTML report of merged result `r`: the merged run and each agent's run overlaid, with the agents table."
  [r]
  (let [page (report/html (cons r (:agent-results (meta r))))]
    (str/replace-first page "<h2>Runs</h2>" (str (agents-html r) "<h2>Runs</h2>"))))
