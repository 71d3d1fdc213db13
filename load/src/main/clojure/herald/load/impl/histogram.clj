(ns herald.load.impl.histogram
  "HdrHistogram helpers: summaries in milliseconds, the wrk2 percentile spectrum, .hgrm text, compact
  base64 encoding for result files, and the interval histogram log (.hlog)."
  (:require [clojure.string :as str])
  (:import (java.io ByteArrayOutputStream PrintStream)
           (java.nio ByteBuffer)
           (java.util Base64)
           (org.HdrHistogram Histogram HistogramLogWriter)))

(set! *warn-on-reflection* true)

(def spectrum-percentiles
  "The percentiles of wrk2's short latency distribution."
  [50.0 75.0 90.0 99.0 99.9 99.99 99.999 100.0])

(defn histogram
  "A new auto-resizing histogram with 3 significant digits (values in microseconds by convention)."
  ^Histogram []
  (Histogram. 3))

(defn us->ms
  "Microseconds (a long) to milliseconds (a double rounded to the microsecond)."
  ^double [us]
  (/ (Math/round (double us)) 1000.0))

(defn value-at
  "The value at percentile `p` (0-100) in milliseconds, or nil for an empty histogram."
  [^Histogram h p]
  (when (pos? (.getTotalCount h))
    (us->ms (.getValueAtPercentile h (double p)))))

(defn summary
  "A summary map of histogram `h` (microsecond values) in milliseconds: :count :min :mean :stdev :p50
  :p75 :p90 :p95 :p99 :p999 :p9999 :p99999 :max."
  [^Histogram h]
  (let [n (.getTotalCount h)]
    (if (zero? n)
      {:count 0}
      {:count n
       :min (us->ms (.getMinValue h))
       :mean (/ (Math/round (* 1000.0 (.getMean h))) 1e6)
       :stdev (/ (Math/round (* 1000.0 (.getStdDeviation h))) 1e6)
       :p50 (value-at h 50) :p75 (value-at h 75) :p90 (value-at h 90) :p95 (value-at h 95)
       :p99 (value-at h 99) :p999 (value-at h 99.9) :p9999 (value-at h 99.99)
       :p99999 (value-at h 99.999) :max (us->ms (.getMaxValue h))})))

(defn brief
  "The progress line's part of `summary`: :p50 :p90 :p99 :p999 :max (ms), {} for an empty histogram; computes only
  those (each percentile walks the histogram: the whole summary, once a second, is 12 walks)."
  [^Histogram h]
  (if (zero? (.getTotalCount h))
    {}
    {:p50 (value-at h 50) :p90 (value-at h 90) :p99 (value-at h 99) :p999 (value-at h 99.9) :max (us->ms (.getMaxValue h))}))

(defn format-ms
  "Formats a millisecond value the way wrk does: 812.00us, 1.07ms, 2.35s."
  [ms]
  (let [ms (double ms)]
    (cond (< ms 1.0) (format "%.2fus" (* ms 1000.0))
          (< ms 1000.0) (format "%.2fms" ms)
          :else (format "%.2fs" (/ ms 1000.0)))))

(defn hgrm
  "The percentile distribution of `h` in HdrHistogram's .hgrm text format, values in milliseconds (the
  format HdrHistogram's plotter reads)."
  ^String [^Histogram h]
  (let [out (ByteArrayOutputStream.)]
    (with-open [ps (PrintStream. out true "UTF-8")]
      (.outputPercentileDistribution h ps (int 5) (double 1000.0)))
    (.toString out "UTF-8")))

(defn spectrum-text
  "wrk2's report of one histogram: the short distribution and the detailed percentile spectrum."
  [title ^Histogram h]
  (str "  Latency Distribution (HdrHistogram - " title ")\n"
       (str/join (for [p spectrum-percentiles]
                   (format "%7.3f%% %10s\n" p (if (pos? (.getTotalCount h)) (format-ms (value-at h p)) "-"))))
       "\n  Detailed Percentile spectrum:\n"
       (hgrm h)))

(defn encode
  "The histogram as base64 of its compressed encoding (lossless)."
  ^String [^Histogram h]
  (let [buf (ByteBuffer/allocate (.getNeededByteBufferCapacity h))
        n (.encodeIntoCompressedByteBuffer h buf)]
    (.encodeToString (Base64/getEncoder) (java.util.Arrays/copyOf (.array buf) (int n)))))

(defn decode
  "The histogram encoded by `encode`."
  ^Histogram [^String s]
  (let [h (Histogram/decodeFromCompressedByteBuffer (ByteBuffer/wrap (.decode (Base64/getDecoder) s)) 0)]
    (doto (Histogram. 3) (.add ^Histogram h))))

(defn merge-histograms
  "One histogram holding every value of `hs`."
  ^Histogram [hs]
  (let [out (histogram)]
    (doseq [^Histogram h hs] (.add out h))
    out))

(defn hlog-writer
  "Opens an interval histogram log (.hlog) at `path` starting at `start-ms` (epoch ms); values are
  microseconds, the max column in milliseconds. Returns a map for `hlog-interval!` and `hlog-close!`.
  `path` :discard writes the same log to nowhere (herald.load.impl.run's warm-up rehearsal)."
  [path start-ms]
  (let [out (if (= path :discard)
              (java.io.OutputStream/nullOutputStream)
              (do (some-> (.getParentFile (java.io.File. (str path))) .mkdirs)
                  (java.io.FileOutputStream. (str path))))
        w (HistogramLogWriter. ^java.io.OutputStream out)]
    (.outputComment w "herald-load interval histogram log; values in microseconds")
    (.outputLogFormatVersion w)
    (.outputStartTime w (long start-ms))
    (.setBaseTime w (long start-ms))
    (.outputLegend w)
    {:writer w :out out}))

(defn hlog-interval!
  "Appends interval histogram `h` covering [start-s, end-s) seconds since the log's start time."
  [{:keys [^HistogramLogWriter writer]} start-s end-s ^Histogram h]
  (.outputIntervalHistogram writer (double start-s) (double end-s) h (double 1000.0)))

(defn hlog-close!
  "Flushes and closes an .hlog writer."
  [{:keys [^java.io.OutputStream out]}]
  (.close out))
