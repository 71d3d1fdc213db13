(ns herald.load.impl.output
  "Result files: the result EDN (lossless, with histograms), a JSON summary, .hgrm spectra, per-minute CSV
  and EDN, the HTML report and PNG plots; and the wrk2-style text summary."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.pprint :as pp]
            [clojure.string :as str]
            [herald.load.impl.aggregate :as agg]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.result-json :as json]
            [herald.load.impl.plot :as plot]
            [herald.load.impl.report :as report]
            [herald.load.impl.steps :as steps]))

(set! *warn-on-reflection* true)

(defn read-result
  "Reads a result EDN file written by `write-result!`; its :label defaults to the file's name."
  [path]
  (let [r (edn/read-string (slurp (io/file path)))]
    (when-not (:herald.load/result r)
      (throw (ex-info (str "not a herald-load result file: " path) {:type :herald.load/bad-result :path (str path)})))
    (update r :label #(or % (let [f (io/file path)]
                              (if (= "result.edn" (.getName f))
                                (.getName (.getAbsoluteFile (.getParentFile (.getAbsoluteFile f))))
                                (str/replace (.getName f) #"\.edn$" "")))))))

(defn- spit-file [dir name content]
  (let [f (io/file dir name)]
    (io/make-parents f)
    (if (bytes? content)
      (with-open [o (io/output-stream f)] (.write o ^bytes content))
      (spit f content))
    (str f)))

(defn write-plots!
  "Writes the HTML report (report.html) and one PNG per chart of `results` into `dir`; returns the paths."
  [dir results]
  (cons (spit-file dir "report.html" (report/html results))
        (doall (for [[stem chart] (report/charts results)]
                 (spit-file dir (str stem ".png") (plot/png chart))))))

(defn summary
  "Result `r` without its histograms (the run's and each step's): the content of summary.json."
  [r]
  (cond-> (dissoc r :histograms)
    (:steps r) (update :steps (partial mapv #(dissoc % :histograms)))))

(defn write-result!
  "Writes every file of result `r` into directory `dir`: result.edn, summary.json, latency.hgrm,
  service.hgrm, per-minute.csv, per-minute.edn, steps.csv and steps.json (rate mode), report.html and the
  PNG plots. Returns the paths."
  [dir r]
  (let [summary (summary r)
        lat (some-> (get-in r [:histograms :latency]) hist/decode)
        svc (some-> (get-in r [:histograms :service]) hist/decode)]
    (doall
     (concat
      [(spit-file dir "result.edn" (with-out-str (pp/pprint r)))
       (spit-file dir "summary.json" (json/write-str summary))]
      (when lat [(spit-file dir "latency.hgrm" (hist/hgrm lat))])
      (when svc [(spit-file dir "service.hgrm" (hist/hgrm svc))])
      (when (seq (:steps r))
        [(spit-file dir "steps.csv" (str (steps/csv (:steps r)) "\n"))
         (spit-file dir "steps.json" (json/write-str (:steps summary)))])
      (when (seq (:per-minute r))
        [(spit-file dir "per-minute.csv" (str (agg/rows->csv (:per-minute r)) "\n"))
         (spit-file dir "per-minute.edn" (with-out-str (pp/pprint (:per-minute r))))])
      (write-plots! dir [r])))))

(defn- operations-text [ops]
  (str (format "\n  %-20s %8s %10s %10s %10s %10s %7s\n" "operation" "count" "p50" "p95" "p99" "max" "errors")
       (str/join (for [[k {:keys [latency errors]}] ops]
                   (format "  %-20s %8d %10s %10s %10s %10s %7d\n" k (long (:count latency 0))
                           (or (some-> (:p50 latency) hist/format-ms) "-") (or (some-> (:p95 latency) hist/format-ms) "-")
                           (or (some-> (:p99 latency) hist/format-ms) "-") (or (some-> (:max latency) hist/format-ms) "-")
                           (long (reduce + 0 (vals errors))))))))

(defn summary-text
  "The text summary of result `r`: wrk2's latency distribution, the detailed spectrum, service time,
  requests, rate (target beside achieved), errors by kind, warnings."
  [r]
  (let [lat (some-> (get-in r [:histograms :latency]) hist/decode)
        ^org.HdrHistogram.Histogram svc (some-> (get-in r [:histograms :service]) hist/decode)
        {:keys [target achieved]} (:rate r)]
    (str (format "herald-load %s %s%s, %d connections, %.2fs\n" (name (:mode r)) (:url r)
                 (if (or (nil? (:protocol r)) (= "http/1.1" (:protocol r))) ""
                     (str " (" (:protocol r) (when (> (long (or (:streams r) 1)) 1) (str ", " (:streams r) " streams per connection")) ")"))
                 (long (or (:connections r) 0)) (double (:duration-s r)))
         (when lat (hist/spectrum-text (if (= :rate (:mode r)) "Recorded Latency, corrected from intended send time" "Recorded Latency") lat))
         (when (and svc (pos? (.getTotalCount svc)) (= :rate (:mode r)))
           (str "\n  Service time (from actual send):"
                (str/join (for [p [50.0 90.0 99.0 99.9 100.0]] (format "  %s %s" (if (= p 100.0) "max" (str "p" p)) (hist/format-ms (hist/value-at svc p)))))
                "\n"))
         (when (seq (:operations r)) (operations-text (:operations r)))
         (when (> (count (:steps r)) 1) (steps/text-table (:steps r)))
         (when (seq (:roles r)) (format "  users: %s\n" (str/join ", " (for [[k n] (:roles r)] (str n " " (name k))))))
         "----------------------------------------------------------\n"
         (format "  %d requests in %.2fs\n" (long (:requests r)) (double (:duration-s r)))
         (format "Requests/sec: %10.2f%s\n" (double achieved) (if target (format "   (target %.2f)" (double target)) ""))
         (when-let [g (:generator r)]
           (format "Generator: %d thread(s), %.2fs CPU, %s CPU per request (whole JVM, warm-up included)%s\n"
                   (long (:threads g)) (double (:cpu-s g)) (if-let [c (:cpu-us-per-request g)] (str c "us") "n/a")
                   (if (seq (keep identity (:io-busy g)))
                     (str "; I/O threads busy in the window: "
                          (str/join ", " (for [b (:io-busy g)] (if b (format "%.0f%%" (* 100 (double b))) "n/a"))))
                     "")))
         (format "Errors: %s\n" (str/join ", " (for [[k n] (:errors r)] (str (name k) " " n))))
         (when (seq (:status r)) (format "Status: %s\n" (str/join ", " (for [[k n] (:status r)] (str k " " n)))))
         (str/join (for [w (:warnings r)] (str "WARNING: " w "\n"))))))
