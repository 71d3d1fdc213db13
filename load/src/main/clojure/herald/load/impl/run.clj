(ns herald.load.impl.run
  "Runs the engine in rate or max mode: builds its config from validated options, collects interval
  histograms while it runs, reports progress, and returns the result map."
  (:require [herald.load.impl.aggregate :as agg]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.meta :as meta]
            [herald.load.impl.options :as options]
            [herald.load.impl.progress :as progress]
            [herald.load.impl.request :as request]
            [clojure.string :as str])
  (:import (herald.load.client ErrorKind)
           (herald.load.engine EngineConfig EngineConfig$Mode LoadEngine)
           (java.util.concurrent CompletableFuture TimeUnit TimeoutException)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- nanos ^long [seconds] (long (* 1e9 (double seconds))))

(defn process-cpu-nanos
  "CPU time used by this JVM so far (all threads: event loops, JIT, GC), in nanoseconds."
  ^long []
  (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean
                      (java.lang.management.ManagementFactory/getOperatingSystemMXBean)))

(defn engine-config
  "The EngineConfig for `mode` (:rate or :max) and validated options."
  ^EngineConfig [mode {:keys [url connections threads rate warmup duration timeout new-connection? script] :as opts}]
  (let [{:keys [host port path]} (request/parse-url url)
        host-header (if (= 80 port) host (str host ":" port))
        req (merge {:path path} (select-keys opts [:method :headers :body]))
        source (if script (request/script-source script req host-header) (request/constant-source req host-header))]
    (EngineConfig. (if (= mode :rate) EngineConfig$Mode/RATE EngineConfig$Mode/MAX)
                   host (int port) (int connections) (int threads) (double (or rate 0))
                   (nanos warmup) (nanos duration) (nanos timeout) (boolean new-connection?) source)))

(defn- error-counts [^LoadEngine engine status]
  (let [kinds (into {} (for [^ErrorKind k (ErrorKind/values)] [(keyword (.label k)) (.errors engine k)]))]
    (assoc kinds :status (reduce + 0 (for [[code n] status :when (or (< code 200) (>= code 400))] n)))))

(defn- status-map [^LoadEngine engine]
  (into (sorted-map) (keep-indexed (fn [i n] (when (pos? n) [i n]))) (.statusCounts engine)))

(defn- interval-entry [t dt ^Histogram l target errors]
  {:t (/ (Math/round (* 1000.0 (double t))) 1000.0)
   :count (.getTotalCount l)
   :rate (/ (.getTotalCount l) (max 1e-9 (double dt)))
   :target target
   :errors errors
   :latency (select-keys (hist/summary l) [:p50 :p90 :p99 :p999 :max])})

(defn- collect-loop
  "Waits for `done`, collecting an interval every `interval` seconds; returns the intervals."
  [^LoadEngine engine ^CompletableFuture done {:keys [interval rate method]} total-l total-s hlog report minutes]
  (loop [intervals [] last-t 0.0 last-errors 0]
    (let [finished? (try (.get done (nanos interval) TimeUnit/NANOSECONDS) true
                         (catch TimeoutException _ false))
          l (hist/histogram) s (hist/histogram)
          _ (.collect engine l s)
          t (max 0.0 (/ (- (min (System/nanoTime) (.endNanos engine)) (.measureFromNanos engine)) 1e9))
          errors (long (reduce + (vals (error-counts engine {}))))
          entry (interval-entry t (- t last-t) l rate (- errors last-errors))]
      (.add ^Histogram total-l l)
      (.add ^Histogram total-s s)
      (when (pos? (.getTotalCount l))
        (agg/add-histogram! minutes (System/currentTimeMillis) "request" (str/lower-case (name method)) l))
      (when (and hlog (pos? (.getTotalCount l))) (hist/hlog-interval! hlog last-t t l))
      (let [intervals (if (or (pos? (:count entry)) (> t last-t)) (conj intervals entry) intervals)]
        (when-not finished? (report entry))
        (if finished? intervals (recur intervals t errors))))))

(defn- warnings [mode {:keys [rate]} achieved backlog errors]
  (cond-> []
    (and (= mode :rate) (< achieved (* 0.99 rate)))
    (conj (format "ACHIEVED RATE %.1f/s IS BELOW THE TARGET %.1f/s: the generator or the server fell short" achieved (double rate)))
    (pos? backlog)
    (conj (format "%d requests were due but found no free connection: raise :connections" backlog))
    (pos? (reduce + (vals errors)))
    (conj (format "%d requests failed: %s" (reduce + (vals errors)) (pr-str (into {} (filter (comp pos? val)) errors))))))

(defn execute
  "Runs `mode` (:rate or :max) with options (see herald.load/rate for the table); returns the result map."
  [mode opts]
  (let [opts (options/validate mode opts)
        engine (LoadEngine. (engine-config mode opts))
        total-l (hist/histogram) total-s (hist/histogram)
        minutes (agg/aggregator)
        report (or (:on-interval opts) (progress/reporter (:progress opts)))
        started (System/currentTimeMillis)]
    (try
      (let [cpu0 (process-cpu-nanos)
            done (.start engine)
            hlog (when-let [p (:hlog opts)] (hist/hlog-writer p (+ started (long (* 1000 (:warmup opts))))))
            body #(collect-loop engine done opts total-l total-s hlog report minutes)
            intervals (if (:handle-interrupt? opts) (progress/with-interrupt #(.stop engine) body) (body))
            _ (when hlog (hist/hlog-close! hlog))
            cpu (- (process-cpu-nanos) cpu0)
            seconds (/ (- (.endNanos engine) (.measureFromNanos engine)) 1e9)
            status (status-map engine)
            errors (error-counts engine status)
            achieved (/ (.getTotalCount total-l) (max 1e-9 seconds))]
        {:herald.load/result 1
         :mode mode
         :meta (meta/run-meta (dissoc opts :on-interval))
         :url (:url opts)
         :rate {:target (when (= mode :rate) (double (:rate opts))) :achieved achieved}
         :requests (.getTotalCount total-l)
         :duration-s seconds
         :connections (:connections opts)
         :errors errors
         :status status
         :backlog (.backlog engine)
         :generator {:threads (:threads opts) :cpu-s (/ cpu 1e9)
                     :cpu-us-per-request (when (pos? (.issued engine)) (/ (Math/round (/ cpu (.issued engine) 10.0)) 100.0))}
         :latency (hist/summary total-l)
         :service (hist/summary total-s)
         :histograms {:latency (hist/encode total-l) :service (hist/encode total-s)}
         :intervals intervals
         :per-minute (agg/rows minutes)
         :warnings (warnings mode opts achieved (.backlog engine) errors)})
      (finally (.close engine)))))
