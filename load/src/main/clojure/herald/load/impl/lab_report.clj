(ns herald.load.impl.lab-report
  "The lab's report: one self-contained HTML page for the whole matrix (the wall per cell as a table and a
  heat map, latency against rate overlaid, GC pause distributions, CPU per request, links to the flame
  graphs, the machine and every version), its charts inline as SVG and as PNG files beside it."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.load.impl.plot :as plot]))

(set! *warn-on-reflection* true)

(defn- esc [s] (-> (str s) (str/replace "&" "&amp;") (str/replace "<" "&lt;") (str/replace ">" "&gt;") (str/replace "\"" "&quot;")))
(defn- f1 [x] (if (number? x) (format "%.1f" (double x)) "-"))
(defn- f3 [x] (if (number? x) (format "%.3f" (double x)) "-"))

(defn cell-label
  "A cell's short name: target / JDK / JVM option set."
  [c]
  (str (:target c) " / " (get-in c [:jdk :name]) " / " (:jvm c)))

(defn- legend-labels
  "Short legend names of `cells` (the legend is narrow): row number, target and JVM option set, and the JDK's
  feature release when the cells span several."
  [summary cells]
  (let [row (into {} (map-indexed (fn [i c] [(:id c) (inc i)]) (:cells summary)))
        several? (> (count (distinct (map #(get-in % [:jdk :major]) cells))) 1)]
    (into {} (for [c cells]
               [(:id c) (str (row (:id c)) " " (:target c) " " (:jvm c) (when several? (str " " (get-in c [:jdk :major]))))]))))

(defn- heat-color
  "White to deep green as `v` goes from 0 to `vmax`; grey without a value."
  [v vmax]
  (if (and (number? v) (pos? (double vmax)))
    (let [f (min 1.0 (/ (double v) (double vmax)))
          mix (fn [a b] (long (Math/round (+ a (* f (- b a))))))]
      (format "#%02x%02x%02x" (mix 247 26) (mix 252 152) (mix 245 80)))
    "#dddddd"))

(defn heat-map
  "The wall per cell as a heat map chart (drawing ops): a row per target x JDK, a column per JVM option set,
  each square coloured by its wall against the highest and labelled with it (or its status)."
  [summary]
  (let [cells (:cells summary)
        rows (vec (distinct (map (juxt :target (comp :name :jdk)) cells)))
        cols (vec (distinct (map :jvm cells)))
        by (into {} (map (juxt (juxt :target (comp :name :jdk) :jvm) identity) cells))
        vmax (reduce max 1 (keep :wall cells))
        [W H] plot/size
        left 230 top 60 cw (/ (- W left 20) (max 1 (count cols))) ch (min 40 (/ (- H top 30) (max 1 (count rows))))]
    {:title "Wall per cell (requests/s within the SLO)"
     :ops (concat
           [[:rect 0 0 W H "#ffffff" nil :background]
            [:text (/ W 2) 22 "Wall per cell (requests/s within the SLO; darker is higher)" :middle 15]]
           (for [[j c] (map-indexed vector cols)] [:text (+ left (* cw j) (/ cw 2)) (- top 8) c :middle 12])
           (apply concat
                  (for [[i [t jdk]] (map-indexed vector rows)
                        :let [y (+ top (* ch i))]]
                    (cons [:text (- left 8) (+ y (/ ch 2) 4) (str t " / " jdk) :end 12]
                          (apply concat
                                 (for [[j c] (map-indexed vector cols)
                                       :let [cell (by [t jdk c]) x (+ left (* cw j)) w (:wall cell)]]
                                   [[:rect x y (- cw 2) (- ch 2) (heat-color w vmax) "#999999" :heat]
                                    [:text (+ x (/ cw 2)) (+ y (/ ch 2) 4)
                                     (cond (nil? cell) "" (= :ok (:status cell)) (if w (format "%.0f/s" (double w)) "none")
                                           :else (name (:status cell)))
                                     :middle 12]]))))))}))

(defn latency-chart
  "p99 against the target rate of every cell's sweep steps, overlaid, with the SLO's p99 bound."
  [summary]
  (let [cells (filter #(seq (:steps %)) (:cells summary))
        xs (mapcat #(map :rate (:steps %)) cells)]
    {:title "p99 against the target rate (every cell's sweep)" :x-label "target rate (requests/s)" :y-label "p99 latency (ms)"
     :series (concat (for [c cells :let [names (legend-labels summary cells)]] {:name (names (:id c)) :points (vec (for [s (:steps c) :when (:p99 s)] [(:rate s) (:p99 s)]))})
                     (when (seq xs) [{:name "SLO p99" :points [[(apply min xs) (get-in summary [:slo :p99])] [(apply max xs) (get-in summary [:slo :p99])]]}]))}))

(defn gc-chart
  "Each cell's GC pauses during its sweep as a percentile spectrum (log scale), overlaid."
  [summary]
  {:title "GC pauses during the sweep, by percentile" :x-label "percentile" :y-label "pause (ms)" :x-scale :percentile
   :series (for [c (:cells summary) :let [ms (get-in c [:gc :pauses-ms])
                                          names (legend-labels summary (filter #(seq (get-in % [:gc :pauses-ms])) (:cells summary)))]
                 :when (seq ms)]
             {:name (names (:id c))
              :points (vec (map-indexed (fn [i v] [(min 6.0 (plot/percentile->x (* 100.0 (/ (double (inc i)) (inc (count ms)))))) v]) ms))})})

(defn cpu-chart
  "CPU time of the target per request during the sweep, one bar per cell."
  [summary]
  (let [rows (keep-indexed (fn [i c] (when (:cpu-ms-per-request c) [(inc i) c])) (:cells summary))]
    {:title "Target CPU per request during the sweep" :kind :bar :x-label "cell (row of the wall table)" :y-label "CPU ms per request"
     :x-ticks (vec (for [[i _] rows] [i (str i)]))
     :series [{:name "CPU ms/request" :points (vec (for [[i c] rows] [i (:cpu-ms-per-request c)]))}]}))

(defn charts
  "The report's charts keyed by file stem."
  [summary]
  {"lab-heatmap" (heat-map summary) "lab-latency" (latency-chart summary)
   "lab-gc-pauses" (gc-chart summary) "lab-cpu" (cpu-chart summary)})

(defn- table [rows]
  (str "<table>\n<tr>" (str/join (map #(str "<th>" % "</th>") (first rows))) "</tr>\n"
       (str/join (for [row (rest rows)] (str "<tr>" (str/join (map #(str "<td>" % "</td>") row)) "</tr>\n")))
       "</table>\n"))

(defn- flame-links [c]
  (str/join " " (for [ev [:cpu :alloc] :let [p (get-in c [:profile ev])] :when p]
                  (if (:file p)
                    (str "<a href=\"cells/" (esc (:id c)) "/" (esc (:file p)) "\" title=\"" (esc (str "async-profiler " (:mode p) " at "
                                                                                   (some->> (get-in c [:profile :rate]) (format "%.0f")) " requests/s")) "\">"
                         (name ev) (when (str/starts-with? (str (:mode p)) "itimer") " (itimer)") "</a>")
                    (str "<span title=\"" (esc (:skipped p)) "\">" (name ev) ": skipped</span>")))))

(defn cell-rows
  "The wall table: a header row, then one row (HTML-escaped cells) per cell."
  [summary]
  (cons ["#" "target" "JDK" "JVM options" "status" "max/s" "wall/s" "highest passed/s" "CPU ms/req" "RSS peak MB"
         "GC pauses" "pause p50 ms" "pause p99 ms" "pause max ms" "alloc MB/s" "flame graphs"]
        (map-indexed (fn [i c]
                       [(str (inc i)) (esc (:target c)) (esc (get-in c [:jdk :name])) (esc (str (:jvm c) ": " (str/join " " (:jvm-opts c))))
                        (esc (str (name (:status c)) (when (:reason c) (str ": " (:reason c)))))
                        (f1 (:max-rate c)) (if (:wall c) (f1 (:wall c)) (if (= :ok (:status c)) "none" "-")) (f1 (:highest-passed c))
                        (f3 (:cpu-ms-per-request c)) (f1 (:rss-peak-mb c)) (str (or (get-in c [:gc :count]) "-"))
                        (f3 (get-in c [:gc :p50-ms])) (f3 (get-in c [:gc :p99-ms])) (f3 (get-in c [:gc :max-ms]))
                        (f1 (get-in c [:gc :alloc-mb-per-s])) (flame-links c)])
                     (:cells summary))))

(defn- versions-html [s]
  (str "<h2>Machine and versions</h2>\n"
       (table [["cores" "memory MB" "kernel" "CPU" "load average at the end" "herald commit" "generator JVM"]
               (mapv esc [(get-in s [:machine :cores]) (get-in s [:machine :memory-mb]) (get-in s [:machine :kernel])
                          (get-in s [:machine :cpu]) (get-in s [:machine :load-average]) (:commit s) (get-in s [:generator :jvm])])])
       (table (cons ["JDK" "home" "java -version"] (for [j (:jdks s)] (mapv esc [(:name j) (:home j) (:java-version j)]))))
       (table (cons ["target" "command" "URL" "version (:version-cmd)"]
                    (for [t (:targets s)]
                      (mapv esc [(:name t) (:cmd t) (:url t) (str/join ", " (distinct (keep #(when (= (:name t) (:target %)) (:target-version %)) (:cells s))))]))))))

(defn html
  "The lab's self-contained HTML report of `summary`."
  [summary]
  (let [cs (charts summary)
        slo (:slo summary)]
    (str "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>herald-load lab: " (esc (:name summary)) "</title>\n"
         "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}"
         "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#f2f2f2}.warn{color:#b00}</style>\n"
         "</head><body>\n<h1>herald-load lab" (when (:name summary) (str ": " (esc (:name summary)))) "</h1>\n"
         "<p>Each cell started its target fresh with its JDK and JVM options, warmed it up ("
         (get-in summary [:sweep :warmup]) " s), then swept the rate in steps of " (get-in summary [:sweep :duration])
         " s (fractions of a measured max). The <b>wall</b> is the highest rate below the first failing step: achieved within 1%, "
         "no errors, p99 &le; " (:p99 slo) " ms and p99.9 &le; " (or (:p999 slo) (* 2 (:p99 slo))) " ms, latency from the intended send time. "
         "CPU per request: the target's process tree's CPU time (/proc) over the requests of the sweep. GC pauses and allocation "
         "(heap growth between collections, an estimate) come from the target's own GC log, within the sweep. "
         "Started " (esc (:started-at summary)) ", finished " (esc (:finished-at summary)) ".</p>\n"
         "<h2>The wall per cell</h2>\n" (table (cell-rows summary))
         (str/join (for [c (:cells summary) w (:warnings c)] (str "<p class=\"warn\">" (esc (cell-label c)) ": " (esc w) "</p>\n")))
         (str/join (for [k ["lab-heatmap" "lab-latency" "lab-gc-pauses" "lab-cpu"] :let [ch (cs k)]]
                     (str "<h2>" (esc (:title ch)) "</h2>\n" (plot/svg ch) "\n")))
         "<p>Legends and the CPU chart's bars are numbered as the rows of the wall table.</p>\n"
         (versions-html summary)
         "</body></html>\n")))

(defn write!
  "Writes report.html and one PNG per chart of `summary` into `out`; returns the paths."
  [out summary]
  (let [f (io/file out "report.html")]
    (io/make-parents f)
    (spit f (html summary))
    (cons (str f)
          (doall (for [[stem ch] (charts summary) :let [pf (io/file out (str stem ".png"))]]
                   (do (with-open [o (io/output-stream pf)] (.write o ^bytes (plot/png ch))) (str pf)))))))
