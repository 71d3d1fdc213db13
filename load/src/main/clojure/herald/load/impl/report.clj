(ns herald.load.impl.report
  "Charts of one or more results (percentile spectrum, latency over time, throughput per second and per
  minute), the self-contained HTML report with inline SVG, PNG files, and the comparison table."
  (:require [clojure.string :as str]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.plot :as plot]
            [herald.load.impl.steps :as steps])
  (:import (org.HdrHistogram Histogram HistogramIterationValue)))

(set! *warn-on-reflection* true)

(defn label
  "The display name of result `r` (its :label, else its mode and target)."
  [r]
  (or (:label r) (str (name (or (:mode r) :run)) (when-let [t (get-in r [:rate :target])] (format " @%.0f/s" (double t))))))

(defn spectrum-points
  "[x y] points of a histogram's percentile spectrum: x on the percentile axis, y in ms."
  [^Histogram h]
  (when (pos? (.getTotalCount h))
    ;; the iterator reuses one mutable value object: read it before advancing (no iterator-seq, it chunks)
    (let [it (.iterator (.percentiles h 5))]
      (loop [out (transient [])]
        (if (.hasNext it)
          (let [^HistogramIterationValue v (.next it)]
            (recur (conj! out [(min 6.0 (plot/percentile->x (.getPercentileLevelIteratedTo v)))
                               (hist/us->ms (.getValueIteratedTo v))])))
          (->> (persistent! out) (partition-by first) (map last) vec))))))

(defn- histogram-of [r k] (some-> (get-in r [:histograms k]) hist/decode))

(defn spectrum-chart
  "The latency percentile spectrum of `results`, overlaid (with service time when there is one result)."
  [results]
  {:title "Latency by percentile (log scale)" :x-label "percentile" :y-label "latency (ms)" :x-scale :percentile
   :series (concat (for [r results :let [h (histogram-of r :latency)] :when h]
                     {:name (label r) :points (spectrum-points h)})
                   (when (= 1 (count results))
                     (when-let [h (histogram-of (first results) :service)]
                       [{:name "service time" :points (spectrum-points h)}])))})

(defn over-time-chart
  "Latency over time: p50/p99/max of one run, or the p99 of each run."
  [results]
  {:title "Latency over time" :x-label "time (s)" :y-label "latency (ms)"
   :series (if (= 1 (count results))
             (for [[k n] [[:p50 "p50"] [:p99 "p99"] [:max "max"]]]
               {:name n :points (vec (for [i (:intervals (first results)) :when (get-in i [:latency k])]
                                       [(:t i) (get-in i [:latency k])]))})
             (for [r results]
               {:name (str (label r) " p99")
                :points (vec (for [i (:intervals r) :when (get-in i [:latency :p99])] [(:t i) (get-in i [:latency :p99])]))}))})

(defn rate-chart
  "Requests per second per interval, one line per run, with the schedule's target when there is one run."
  [results]
  {:title "Throughput per interval" :x-label "time (s)" :y-label "requests/s"
   :series (concat (for [r results] {:name (label r) :points (mapv (juxt :t :rate) (:intervals r))})
                   (when (= 1 (count results))
                     (let [pts (vec (for [i (:intervals (first results)) :when (:target i)] [(:t i) (:target i)]))]
                       (when (seq pts) [{:name "target" :points pts}]))))})

(defn- multi-step? [r] (> (count (:steps r)) 1))

(defn- ramped? [r] (some :to (:schedule r)))

(defn latency-by-target-chart
  "A ramped run's interval latencies (p50, p99, max) against the schedule's target rate in each interval."
  [r]
  {:title "Latency against the target rate (per interval)" :x-label "target rate (requests/s)" :y-label "latency (ms)"
   :series (for [[k n] [[:p50 "p50"] [:p99 "p99"] [:max "max"]]]
             {:name n :points (vec (sort (for [i (:intervals r) :when (and (:target i) (get-in i [:latency k]))]
                                           [(:target i) (get-in i [:latency k])])))})})

(defn- step-x
  "The x of each step: its target rate when targets strictly increase (a staircase), else its number."
  [step-list]
  (let [rates (map :target-rate step-list)]
    (if (and (every? #(nil? (get-in % [:target :to])) step-list) (apply < rates))
      [:target-rate "target rate (requests/s)"]
      [:step "step"])))

(defn steps-latency-chart
  "Latency percentiles (corrected) and service time p99 of each step of run `r`."
  [r]
  (let [[xk xl] (step-x (:steps r))]
    {:title "Per step: latency" :x-label xl :y-label "latency (ms)"
     :series (for [[path n] [[[:latency :p50] "p50"] [[:latency :p90] "p90"] [[:latency :p99] "p99"]
                             [[:latency :p999] "p99.9"] [[:service :p99] "service p99"]]]
               {:name n :points (vec (for [s (:steps r) :when (get-in s path)] [(xk s) (get-in s path)]))})}))

(defn steps-rate-chart
  "Target against achieved rate (and throughput during the step) of each step of run `r`."
  [r]
  (let [[xk xl] (step-x (:steps r))]
    {:title "Per step: target and achieved rate" :x-label xl :y-label "requests/s"
     :series [{:name "target" :points (mapv (juxt xk :target-rate) (:steps r))}
              {:name "achieved" :points (mapv (juxt xk :achieved) (:steps r))}
              {:name "throughput" :points (vec (for [s (:steps r) :when (:throughput s)] [(xk s) (:throughput s)]))}]}))

(defn per-minute-chart
  "Requests per minute as grouped bars, one group per minute of the clock (UTC): per entity x operation
  for one run; for several runs, one bar per run, each run's minutes counted from its own first minute."
  [results]
  (let [one? (= 1 (count results))
        t0-all (some->> (seq (mapcat :per-minute results)) (map :minute-ms) (apply min))
        series-of (fn [nm rows t0]
                    {:name nm :points (->> (group-by :minute-ms rows)
                                           (map (fn [[m rs]] [(quot (- (long m) (long t0)) 60000) (reduce + (map :count rs))]))
                                           (sort-by first) vec)})
        series (if one?
                 (for [[[e o] rows] (sort-by key (group-by (juxt :entity :operation) (:per-minute (first results))))]
                   (series-of (str e " " o) rows t0-all))
                 (for [r results :when (seq (:per-minute r))]
                   (series-of (label r) (:per-minute r) (apply min (map :minute-ms (:per-minute r))))))
        minutes (sort (distinct (mapcat #(map first (:points %)) series)))
        clock (fn [i] (let [t (java.time.LocalDateTime/ofEpochSecond (quot (+ (long t0-all) (* 60000 (long i))) 1000) 0 java.time.ZoneOffset/UTC)]
                        (format "%02d:%02d" (.getHour t) (.getMinute t))))]
    {:title "Throughput per minute" :kind :bar :y-label "requests/min"
     :x-label (if one? "minute (UTC)" "minute of each run")
     :x-ticks (vec (for [i minutes] [i (if one? (clock i) (str i))]))
     :series series}))

(defn sweep-chart
  "p99 and p99.9 against the target rate of a sweep's steps, with the bounds."
  [{:keys [steps p99-bound p999-bound]}]
  {:title "Sweep: latency against target rate" :x-label "target rate (requests/s)" :y-label "latency (ms)"
   :series (let [xs (map :rate steps) line (fn [y] [[(apply min xs) y] [(apply max xs) y]])]
             [{:name "p99" :points (mapv (juxt :rate :p99) (filter :p99 steps))}
              {:name "p99.9" :points (mapv (juxt :rate :p999) (filter :p999 steps))}
              {:name "p99 bound" :points (line p99-bound)}
              {:name "p99.9 bound" :points (line p999-bound)}])})

(defn charts
  "Every chart of `results` keyed by file stem."
  [results]
  (cond-> {"spectrum" (spectrum-chart results)
           "latency-over-time" (over-time-chart results)
           "throughput" (rate-chart results)}
    (some (comp seq :per-minute) results) (assoc "per-minute" (per-minute-chart results))
    (and (= 1 (count results)) (multi-step? (first results)))
    (assoc "steps-latency" (steps-latency-chart (first results))
           "steps-rate" (steps-rate-chart (first results))
           "steps-spectrum" (assoc (spectrum-chart (steps/step-results (first results))) :title "Per step: latency by percentile (log scale)"))
    (and (= 1 (count results)) (ramped? (first results)))
    (assoc "latency-by-target" (latency-by-target-chart (first results)))))

(def chart-order
  "The charts of a report, in the order shown."
  ["spectrum" "latency-over-time" "throughput" "per-minute" "steps-latency" "steps-rate" "steps-spectrum" "latency-by-target"])

(def ^:private table-columns
  [["run" label] ["mode" #(some-> % :mode name)] ["target/s" #(some->> % :rate :target (format "%.1f"))]
   ["achieved/s" #(some->> % :rate :achieved (format "%.1f"))] ["requests" :requests]
   ["errors" #(reduce + (vals (:errors %)))] ["p50" #(get-in % [:latency :p50])] ["p90" #(get-in % [:latency :p90])]
   ["p99" #(get-in % [:latency :p99])] ["p99.9" #(get-in % [:latency :p999])]
   ["p99.99" #(get-in % [:latency :p9999])] ["max" #(get-in % [:latency :max])]
   ["svc p99" #(get-in % [:service :p99])]
   ["protocol" #(str (or (:protocol %) "http/1.1") (when (> (long (or (:streams %) 1)) 1) (str " x" (:streams %))))]
   ["gc" #(str/join "+" (get-in % [:meta :gc]))]
   ["commit" #(get-in % [:meta :commit])]])

(defn table-rows
  "The comparison table: a header row then one row of strings per result (latencies in ms)."
  [results]
  (cons (mapv first table-columns)
        (for [r results] (mapv (fn [[_ f]] (str (f r))) table-columns))))

(defn table-text
  "The comparison table as aligned text."
  [results]
  (let [rows (table-rows results)
        widths (apply map (fn [& cells] (apply max (map count cells))) rows)]
    (str/join "\n" (for [row rows] (str/join "  " (map (fn [w c] (format (str "%-" w "s") c)) widths row))))))

(defn- esc [s] (-> (str s) (str/replace "&" "&amp;") (str/replace "<" "&lt;") (str/replace ">" "&gt;")))

(defn- html-table [rows]
  (str "<table>\n<tr>" (str/join (map #(str "<th>" (esc %) "</th>") (first rows))) "</tr>\n"
       (str/join (for [row (rest rows)] (str "<tr>" (str/join (map #(str "<td>" (esc %) "</td>") row)) "</tr>\n")))
       "</table>"))

(defn- meta-rows [r]
  (let [m (:meta r)]
    (cons ["run" "url" "protocol" "commit" "jvm" "gc" "cores" "transport" "started" "connections"]
          [[(label r) (:url r) (str (or (:protocol r) "http/1.1") (when (> (long (or (:streams r) 1)) 1) (str " x " (:streams r) " streams")))
            (:commit m) (:jvm m) (str/join ", " (:gc m)) (:cores m) (some-> (:transport m) name)
            (:started-at m) (:connections r)]])))

(defn- steps-html [r]
  (let [step-list (:steps r)
        rows (cons ["step" "target" "start s" "target/s" "achieved/s" "throughput/s" "planned" "sent" "requests" "errors" "waits" "late"
                    "p50" "p90" "p99" "p99.9" "max" "svc p50" "svc p99"]
                   (for [s step-list]
                     (mapv str [(:step s) (:label s) (:start-s s) (format "%.1f" (double (:target-rate s)))
                                (format "%.1f" (double (:achieved s))) (format "%.1f" (double (:throughput s))) (:planned s) (:sent s) (:requests s)
                                (reduce + (vals (:errors s))) (:connection-waits s) (:late-sends s)
                                (get-in s [:latency :p50]) (get-in s [:latency :p90]) (get-in s [:latency :p99])
                                (get-in s [:latency :p999]) (get-in s [:latency :max])
                                (get-in s [:service :p50]) (get-in s [:service :p99])])))]
    (str "<h2>Steps: " (esc (label r)) "</h2>\n<p>Every step ran on the same connections, one after the other; "
         "a request belongs to the step of its intended send time. Achieved: responses to the step's requests per second of the step; throughput: responses that arrived during the step, to any request. Waits: requests that found no free connection; late: requests the generator sent more than 5 ms late with a connection free.</p>\n"
         (html-table rows)
         (str/join (for [s step-list w (:warnings s)] (str "<p class=\"warn\">" (esc w) "</p>\n"))))))

(defn operations-rows
  "The per entity x operation table of a feed result: a header row, then per operation its count, p50,
  p95, p99 and max (ms) and errors, as stdout and summary.json have them."
  [r]
  (cons ["operation" "count" "p50" "p95" "p99" "max" "errors"]
        (for [[k {:keys [latency errors]}] (:operations r)]
          (into [(str k) (str (long (:count latency 0)))]
                (concat (for [p [:p50 :p95 :p99 :max]] (str (or (get latency p) "-")))
                        [(str (long (reduce + 0 (vals errors))))])))))

(defn- operations-html [r]
  (str "<h2>Operations: " (esc (label r)) "</h2>\n<p>Every request by entity x operation (latency in ms, from the actual send).</p>\n"
       (html-table (operations-rows r)) "\n"))

(defn html
  "A self-contained HTML report of `results` (one or more result maps), every plot inline as SVG."
  [results]
  (let [cs (charts results)]
    (str "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>herald-load report</title>\n"
         "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}"
         "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#f2f2f2}"
         "pre{background:#f7f7f7;padding:8px;font-size:12px;overflow:auto;max-height:360px}.warn{color:#b00}</style>\n"
         "</head><body>\n<h1>herald-load report</h1>\n"
         "<p>Latencies in milliseconds. In rate mode latency is measured from each request's intended send time "
         "(no coordinated omission); service time is measured from the actual send.</p>\n"
         (html-table (table-rows results))
         (str/join (for [r results w (:warnings r) :when (not (str/starts-with? w "STEP "))]
                     (str "<p class=\"warn\">" (esc (label r)) ": " (esc w) "</p>\n")))
         (str/join (for [r results :when (seq (:operations r))] (operations-html r)))
         (str/join (for [k (take 4 chart-order) :when (cs k)]
                     (str "<h2>" (esc (:title (cs k))) "</h2>\n" (plot/svg (cs k)) "\n")))
         (str/join (for [r results :when (multi-step? r)] (steps-html r)))
         (str/join (for [k (drop 4 chart-order) :when (cs k)]
                     (str "<h2>" (esc (:title (cs k))) "</h2>\n" (plot/svg (cs k)) "\n")))
         "<h2>Runs</h2>\n" (str/join (for [r results] (html-table (meta-rows r))))
         (str/join (for [r results :let [h (histogram-of r :latency)] :when h]
                     (str "<h3>" (esc (label r)) "</h3><pre>" (esc (hist/spectrum-text "Recorded Latency" h)) "</pre>\n")))
         "</body></html>\n")))
