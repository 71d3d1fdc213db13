(ns herald.load.report-test
  "Result files, the HTML report with inline SVG, PNG plots, .hgrm/.hlog formats, compare, and the CLI."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.load :as load]
            [herald.json :as json]
            [herald.load.impl.plot :as plot]
            [herald.load.impl.report :as report]
            [herald.load.main :as main]
            [herald.load.test-server :as ts])
  (:import (javax.imageio ImageIO)
           (org.HdrHistogram HistogramLogReader Histogram)))

(set! *warn-on-reflection* true)

(defn- temp-dir ^java.io.File []
  (.toFile (java.nio.file.Files/createTempDirectory "herald-load" (make-array java.nio.file.attribute.FileAttribute 0))))

(deftest ^:integration results-reports-and-plots
  (ts/with-server [s ts/hello]
    (let [dir (temp-dir)
          hlog (io/file dir "latency.hlog")
          a (assoc (load/rate {:url (:url s) :rate 200 :duration 2 :connections 4 :progress :quiet :hlog (str hlog)}) :label "a")
          b (assoc (load/max-load {:url (:url s) :duration 1 :connections 2 :progress :quiet}) :label "b")
          paths (set (map #(.getName (io/file %)) (load/write-result! (io/file dir "a") a)))]
      (is (every? paths ["result.edn" "summary.json" "latency.hgrm" "service.hgrm" "per-minute.csv"
                         "per-minute.edn" "report.html" "spectrum.png" "latency-over-time.png" "throughput.png"]))
      (testing "the result file reads back with metadata"
        (let [r (load/read-result (io/file dir "a" "result.edn"))]
          (is (= (:requests a) (:requests r)))
          (is (every? #(contains? (:meta r) %) [:commit :jvm :gc :cores :options]))
          (is (= 200 (get-in r [:meta :options :rate])))))
      (testing ".hgrm is HdrHistogram's percentile distribution format"
        (let [text (slurp (io/file dir "a" "latency.hgrm"))]
          (is (re-find #"Value\s+Percentile\s+TotalCount 1/\(1-Percentile\)" text))
          (is (str/includes? text (str "Total count    =" (format "%13d" (:requests a)))))))
      (testing ".hlog holds the interval histograms"
        (let [reader (HistogramLogReader. (str hlog))
              hs (take-while some? (repeatedly #(.nextIntervalHistogram reader)))]
          (is (seq hs))
          (is (= (:requests a) (reduce + (map #(.getTotalCount ^Histogram %) hs))))))
      (testing "the HTML report is self-contained with inline SVG plots"
        (let [html (slurp (io/file dir "a" "report.html"))]
          (is (>= (count (re-seq #"<svg " html)) 4))
          (is (str/includes? html "Latency by percentile"))
          (is (not (re-find #"(?i)<script|<link|(src|href)=\"https?:" html)))))
      (testing "PNGs decode"
        (doseq [f ["spectrum.png" "latency-over-time.png" "throughput.png" "per-minute.png"]]
          (let [img (ImageIO/read (io/file dir "a" f))]
            (is (some? img) f)
            (is (= 860 (.getWidth img))))))
      (testing "merge adds histograms exactly and sums counts"
        (let [m (load/merge-results [a a])]
          (is (= (* 2 (:requests a)) (:requests m) (get-in m [:latency :count])))
          (is (= (get-in a [:latency :p99]) (get-in m [:latency :p99])))
          (is (= (* 2 (get-in a [:rate :achieved])) (get-in m [:rate :achieved])))
          (is (= ["a" "a"] (:merged-from m)))))
      (testing "compare overlays several runs"
        (let [table (load/compare-table [a b])]
          (is (str/includes? table "p99.9"))
          (is (= 3 (count (str/split-lines table)))))
        (load/report! (io/file dir "cmp") [a b])
        (let [html (slurp (io/file dir "cmp" "report.html"))]
          (is (str/includes? html ">a</text>"))
          (is (str/includes? html ">b</text>")))))))

(deftest ^:integration cli-runs-and-writes
  (ts/with-server [s ts/hello]
    (let [dir (temp-dir)
          out (with-out-str (binding [*err* (java.io.StringWriter.)] (is (zero? (main/run-cli ["rate" (:url s) "-R" "100" "-d" "1s" "-c" "16" "-q" "-o" (str dir "/r")])))))]
      (is (str/includes? out "Latency Distribution (HdrHistogram - Recorded Latency"))
      (is (re-find #"(?m)^herald-load mode=rate requests=\d+ target_rps=100.0 achieved_rps=[\d.]+ p50_ms=[\d.]+ p99_ms=[\d.]+ p999_ms=[\d.]+ max_ms=[\d.]+ errors=0$" out))
      (is (.exists (io/file dir "r" "result.edn")))
      (is (.exists (io/file dir "r" "latency.hlog")) "-o also writes the interval histogram log")
      (let [cmp (with-out-str (main/run-cli ["compare" (str dir "/r/result.edn") (str dir "/r/result.edn")]))]
        (is (str/includes? cmp "achieved/s"))))))

(deftest ^:integration stepped-run-outputs-per-step
  (ts/with-server [s ts/hello]
    (let [dir (temp-dir)
          err (java.io.StringWriter.)
          out (with-out-str (binding [*err* err]
                              (is (zero? (main/run-cli ["rate" (:url s) "--rate" "40:0.5s,80:0.5s" "-c" "4" "-t" "1"
                                                        "--progress" "text" "--interval" "0.25" "-o" (str dir "/r")])))))
          r (load/read-result (io/file dir "r" "result.edn"))]
      (testing "the result holds the schedule and one map per step"
        (is (= [{:rate 40.0 :duration 0.5} {:rate 80.0 :duration 0.5}] (:schedule r)))
        (is (= [20 40] (mapv :planned (:steps r))))
        ;; one generator thread shares the cores with the test server: on an overloaded machine it may fall behind,
        ;; and then what it did not send must be reported as unsent, never lost from the count
        (is (= [20 40] (mapv #(+ (:sent %) (:unsent %)) (:steps r))) (pr-str (map #(select-keys % [:sent :unsent]) (:steps r))))
        (when-not (ts/overloaded?)
          (is (= [20 40] (mapv :sent (:steps r)))))
        (is (= (:requests r) (reduce + (map :requests (:steps r))))))
      (testing "stdout has the step table and one machine-readable line per step before the last line"
        (is (str/includes? out "Steps (latency corrected from intended send time"))
        (is (re-find #"(?m)^herald-load step=1 label=40/s requests=\d+ target_rps=40.0 achieved_rps=[\d.]+ p50_ms=[\d.]+ p99_ms=[\d.]+ p999_ms=[\d.]+ max_ms=[\d.]+ service_p99_ms=[\d.]+ errors=0 connection_waits=\d+ late_sends=\d+$" out))
        (is (re-find #"(?m)^herald-load step=2 label=80/s .* target_rps=80.0 " out))
        (is (str/starts-with? (last (str/split-lines out)) "herald-load mode=rate ")))
      (testing "settled steps are reported live on stderr"
        (is (re-find #"\[step 1 40/s\] [\d.]+ req/s \(target 40.0\)" (str err)))
        (is (re-find #"\[step 2 80/s\] [\d.]+ req/s \(target 80.0\)" (str err)) "the last step too, once the run is over"))
      (testing "steps.csv and steps.json"
        (let [[header & rows] (str/split-lines (slurp (io/file dir "r" "steps.csv")))
              js (json/read (.getBytes (slurp (io/file dir "r" "steps.json")) "UTF-8") {:keywords? true})]
          (is (= (str "step,label,start_s,duration_s,target_from_rps,target_to_rps,target_rps,achieved_rps,throughput_rps,"
                      "planned,sent,requests,unsent,connection_waits,late_sends,errors,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,"
                      "service_p50_ms,service_p99_ms,service_max_ms,complete")
                 header) "the columns docs/load.md lists")
          (is (= 2 (count rows)))
          (is (str/starts-with? (first rows) "1,40/s,0.0,0.5,40.0,40.0,40.0,"))
          (is (= [1 2] (mapv :step js)))
          (is (not-any? :histograms js) "histograms stay in result.edn")
          (is (not-any? :histograms (:steps (json/read (.getBytes (slurp (io/file dir "r" "summary.json")) "UTF-8") {:keywords? true}))))))
      (testing "the report has a per-step section with its plots"
        (let [html (slurp (io/file dir "r" "report.html"))]
          (is (str/includes? html "<h2>Steps: "))
          (is (str/includes? html "Per step: latency"))
          (is (str/includes? html "Per step: target and achieved rate"))
          (is (str/includes? html "Per step: latency by percentile"))
          (is (>= (count (re-seq #"<svg " html)) 6)))
        (doseq [f ["steps-latency.png" "steps-rate.png" "steps-spectrum.png"]]
          (is (some? (ImageIO/read (io/file dir "r" f))) f)))
      (testing "compare --steps has one row per step"
        (let [cmp (with-out-str (main/run-cli ["compare" "--steps" (str dir "/r/result.edn")]))]
          (is (re-find #"(?m)^r step 1 40/s +rate +40.0 " cmp) cmp)
          (is (re-find #"(?m)^r step 2 80/s +rate +80.0 " cmp) cmp)))
      (testing "merging side-by-side stepped runs merges their steps exactly"
        (let [m (load/merge-results [r r])]
          (is (= (mapv #(* 2 (:requests %)) (:steps r)) (mapv :requests (:steps m))))
          (is (= (mapv #(* 2 (:target-rate %)) (:steps r)) (mapv :target-rate (:steps m))))
          (is (= (mapv #(get-in % [:latency :p99]) (:steps r)) (mapv #(get-in % [:latency :p99]) (:steps m)))))))))

(deftest ^:integration ramp-and-schedule-options-on-the-command-line
  (ts/with-server [s ts/hello]
    (let [run (fn [& args] (binding [*err* (java.io.StringWriter.)]
                             (let [code (atom nil) out (with-out-str (reset! code (main/run-cli (into ["rate" (:url s) "-c" "4" "-q"] args))))]
                               [@code out])))
          [code out] (run "--ramp" "20..60:0.5s")
          dir (temp-dir)
          [code2 out2] (run "--schedule" "[{:rate 30 :duration 0.3} {:rate 30 :to 90 :duration 0.3}]" "--interval" "0.1" "-o" (str dir))]
      (is (zero? code))
      (is (re-find #"(?m)^herald-load mode=rate requests=\d+ target_rps=40.0 " out) "a ramp's target is its mean")
      (is (zero? code2))
      (is (re-find #"(?m)^herald-load step=2 label=30..90/s " out2))
      (is (str/includes? (slurp (io/file dir "report.html")) "Latency against the target rate (per interval)"))
      (is (some? (ImageIO/read (io/file dir "latency-by-target.png"))) "a ramp gets its latency-by-target plot")
      (is (= 1 (first (run "--rate" "10" "--ramp" "10..20:1s"))) "one of --rate, --ramp, --schedule")
      (is (= 1 (first (run "--ramp" "10:1s"))) "--ramp wants FROM..TO")
      (is (= 1 (first (run "--rate" "10:1s,0:1s"))) "a step at rate 0 is refused"))))

(deftest ^:integration progress-as-json-lines
  (ts/with-server [s ts/hello]
    (let [out (with-out-str (load/rate {:url (:url s) :rate 100 :duration 1.2 :interval 0.5 :connections 2 :progress :json}))
          lines (map #(json/read (.getBytes ^String % "UTF-8") {:keywords? true}) (str/split-lines out))]
      (is (>= (count lines) 2))
      (is (every? #(= "interval" (:type %)) lines))
      (is (every? #(and (number? (:rate %)) (== 100 (:target %)) (map? (:latency %))) lines)))))

(deftest ^:integration json-progress-on-the-command-line-is-pure-json-lines
  (ts/with-server [s ts/hello]
    (let [err (java.io.StringWriter.)
          out (with-out-str (binding [*err* err]
                              (is (zero? (main/run-cli ["rate" (:url s) "-R" "50" "-d" "1.2s" "-w" "0s" "--interval" "0.5"
                                                        "-c" "2" "--progress" "json"])))))
          lines (map #(json/read (.getBytes ^String % "UTF-8") {:keywords? true}) (str/split-lines out))
          intervals (filter #(= "interval" (:type %)) lines)]
      (is (= "summary" (:type (last lines))) "every stdout line is JSON, the summary last")
      (is (>= (count intervals) 3))
      (is (> (:t (last intervals)) 1.1) "the last, partial interval is printed too")
      (is (re-find #"(?m)^herald-load mode=rate " (str err)) "the key=value line goes to stderr"))))

(deftest ^:integration a-run-against-a-dead-server-fails-and-says-so
  (let [code (atom nil)
        out (with-out-str (binding [*err* (java.io.StringWriter.)]
                            (reset! code (main/run-cli ["rate" "http://127.0.0.1:1/health" "-R" "10" "-d" "1s" "-c" "4" "-q"]))))
        failed (some->> (re-find #"WARNING: (\d+) requests failed" out) second parse-long)]
    (is (= 2 @code) "every request failed: non-zero exit status")
    (is (str/includes? out "n/a CPU per request") out)
    (is (not (str/includes? out "nullus")))
    (is (not (str/includes? out "raise --connections")) out)
    (is (re-find #"connect attempts failed and \d+ requests were due but never sent: connection refused: is the server up\?" out) out)
    (is (and failed (<= 8 failed 10)) "requests counted (10 due), not connect retries every 20 ms")
    (is (re-find #"(?m)^herald-load mode=rate requests=0 .* errors=(8|9|10)$" out) out)))

(defn- per-minute-rows
  "Per-minute rows of `minutes` minutes from 22:17 UTC, for `ops` [entity operation count-in-minute-0] each
  growing by its count every minute."
  [minutes ops]
  (let [t0 (.toEpochMilli (java.time.Instant/parse "2026-11-25T22:17:00Z"))]
    (vec (for [m (range minutes) [e o n] ops]
           {:minute-ms (+ t0 (* 60000 m)) :entity e :operation o :count (* n (inc m)) :median 1.0 :p95 2.0 :p99 3.0 :max 4.0}))))

(defn- bars-inside-the-plot [chart]
  (let [[l t w h] (plot/plot-area)
        ops (plot/chart-ops chart)
        bars (filter #(= :bar (nth % 7 nil)) ops)
        ticks (for [[op x y s] ops :when (and (= op :text) (= y (+ t h 16)))] [x s])]
    (is (seq bars))
    (doseq [[_ x y bw bh] bars]
      (is (<= l x (+ x bw) (+ l w)) (str "bar inside the plot horizontally: " x " + " bw))
      (is (<= t y (+ y bh) (+ t h)) (str "bar inside the plot vertically: " y " + " bh))
      (is (pos? bw)))
    (testing "the y axis is scaled to the data: the tallest bar reaches above 90% of the plot's height"
      (is (<= (* 0.9 h) (apply max (map #(nth % 4) bars)) (+ h 1e-6))))
    {:bars bars :ticks ticks}))

(deftest per-minute-chart-draws-its-bars-inside-the-plot
  (testing "one run of one minute (the short run of a new user): one group of bars, centred on its minute"
    (let [r {:per-minute (per-minute-rows 1 [["friends" "post" 171] ["outbound" "post" 595] ["outbound" "search" 2222] ["participant" "post" 270]])}
          {:keys [bars ticks]} (bars-inside-the-plot (report/per-minute-chart [r]))
          [[tick-x label]] ticks]
      (is (= 4 (count bars)))
      (is (= [["22:17"]] (map (comp vector second) ticks)) "the x axis has the run's minute, not 0..1")
      (is (< (Math/abs (- (/ (+ (second (first bars)) (let [[_ x _ w] (last bars)] (+ x w))) 2.0) tick-x)) 1e-6)
          "the group is centred on its tick")
      (is (= [171 595 2222 270] (map :count (:per-minute r))))
      (let [hs (map #(nth % 4) bars)]
        (is (< (Math/abs (- (/ (nth hs 0) (nth hs 2)) (/ 171.0 2222))) 1e-9) "bar heights proportional to the counts"))))
  (testing "several minutes: one group per minute, groups do not overlap"
    (let [r {:per-minute (per-minute-rows 4 [["participant" "post" 100] ["outbound" "post" 250]])}
          {:keys [bars ticks]} (bars-inside-the-plot (report/per-minute-chart [r]))]
      (is (= ["22:17" "22:18" "22:19" "22:20"] (map second ticks)))
      (is (= 8 (count bars)))
      (let [xs (sort (map second bars))]
        (is (every? (fn [[a b]] (<= (+ a (nth (first bars) 3)) (+ b 1e-6))) (partition 2 1 xs)) "no bar overlaps the next"))))
  (testing "several runs overlaid (compare), each from its own first minute"
    (let [a {:label "a" :per-minute (per-minute-rows 1 [["request" "get" 600]])}
          b {:label "b" :per-minute (update-in (per-minute-rows 2 [["request" "get" 900]]) [0 :minute-ms] + 3600000)}]
      (bars-inside-the-plot (report/per-minute-chart [a b]))))
  (testing "the PNG has no bar colour left of the plot, where the axis labels are"
    (let [r {:per-minute (per-minute-rows 1 [["a" "x" 10] ["b" "y" 20] ["c" "z" 30]])}
          img (ImageIO/read (java.io.ByteArrayInputStream. (plot/png (report/per-minute-chart [r]))))
          [l t w h] (plot/plot-area)
          colours (set (map #(.getRGB (java.awt.Color/decode %)) (take 3 plot/palette)))
          outside (for [x (range 0 l) y (range t (+ t h)) :when (colours (.getRGB img x y))] [x y])
          inside (for [x (range l (+ l w)) y (range t (+ t h)) :when (colours (.getRGB img x y))] [x y])]
      (is (empty? outside) "no bar over the y axis labels")
      (is (> (count inside) 1000) "the bars are drawn"))))

(deftest spectrum-points-follow-the-histogram
  (let [h (Histogram. 3)]
    (doseq [v (range 1 10001)] (.recordValue h (* 1000 v)))   ; 1..10000 ms, uniform
    (let [pts (report/spectrum-points h)
          near (fn [x] (second (first (sort-by #(Math/abs (double (- (first %) x))) pts))))]
      (is (> (count pts) 30))
      (is (apply < (map first pts)) "x strictly increasing")
      (is (< 4900 (near (Math/log10 2)) 5100) "p50 ~ 5000 ms")
      (is (< 9800 (near 2.0) 10100) "p99 ~ 9900 ms"))))

(deftest cli-help-and-errors
  (is (str/includes? (with-out-str (is (zero? (main/run-cli ["--help"])))) "Commands:"))
  (doseq [cmd ["rate" "max" "sweep" "feed" "report" "compare" "merge" "aggregate"]]
    (is (str/includes? (with-out-str (is (zero? (main/run-cli [cmd "--help"])))) "Options:") cmd))
  (binding [*err* (java.io.StringWriter.)]
    (is (= 1 (main/run-cli ["bogus"])))
    (is (= 1 (main/run-cli ["rate" "http://127.0.0.1:1/"])))
    (is (= 1 (main/run-cli ["rate" "http://127.0.0.1:1/" "-R" "10" "-c" "0"])))))
