(ns herald.load.impl.run
  "Runs the engine in rate or max mode: builds its config from validated options, collects interval
  histograms while it runs, reports progress, and returns the result map."
  (:require [herald.load.impl.aggregate :as agg]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.meta :as meta]
            [herald.load.impl.options :as options]
            [herald.load.impl.progress :as progress]
            [herald.load.impl.protocol :as protocol]
            [herald.load.impl.request :as request]
            [herald.load.impl.schedule :as schedule]
            [herald.load.impl.steps :as steps]
            [herald.load.impl.warnings :as warnings]
            [clojure.string :as str])
  (:import (herald.load.client ConnectFailure ErrorKind)
           (herald.load.engine EngineConfig LoadEngine RateSchedule SendListener)
           (java.util.concurrent CompletableFuture TimeUnit TimeoutException)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- nanos ^long [seconds] (long (* 1e9 (double seconds))))

(defn process-cpu-nanos
  "CPU time used by this JVM so far (all threads: event loops, JIT, GC), in nanoseconds."
  ^long []
  (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean
                      (java.lang.management.ManagementFactory/getOperatingSystemMXBean)))

(defn- send-listener [f]
  (when f
    (reify SendListener
      (onSend [_ k intended sent] (f k intended sent)))))

(defn engine-config
  "The EngineConfig for `mode` (:rate or :max) and validated options (rate mode: :phases from
  herald.load.impl.schedule/normalize, run after a warm-up phase when :warmup > 0). The URL's host is
  resolved here, once: an unknown host throws a :herald.load/bad-option before anything is sent."
  ^EngineConfig [mode {:keys [url connections threads phases warmup duration timeout new-connection? script on-send] :as opts}]
  (let [{:keys [host port path tls?] :as u} (request/parse-url url)
        address (request/resolve-host host :url url)
        host-header (request/host-header u)
        target (protocol/target opts address port host tls? timeout)
        req (merge {:path path} (select-keys opts [:method :headers :body]))
        source (if script (request/script-source script req host-header) (request/constant-source req host-header))]
    (if (= mode :rate)
      (EngineConfig/rate target (int connections) (int threads) (schedule/engine-schedule phases warmup)
                         (if (pos? (double warmup)) 1 0) (nanos timeout) (boolean new-connection?) source
                         (send-listener on-send))
      (EngineConfig/max target (int connections) (int threads) (nanos warmup) (nanos duration)
                        (nanos timeout) (boolean new-connection?) source (send-listener on-send)))))

(defn- error-counts [^LoadEngine engine status]
  (let [kinds (into {} (for [^ErrorKind k (ErrorKind/values)] [(keyword (.label k)) (.errors engine k)]))]
    (assoc kinds :status (reduce + 0 (for [[code n] status :when (or (< code 200) (>= code 400))] n)))))

(defn- status-map [^LoadEngine engine]
  (into (sorted-map) (keep-indexed (fn [i n] (when (pos? n) [i n]))) (.statusCounts engine)))

(defn- interval-entry [t dt ^Histogram l target step errors]
  (cond-> {:t (/ (Math/round (* 1000.0 (double t))) 1000.0)
           :count (.getTotalCount l)
           :rate (/ (.getTotalCount l) (max 1e-9 (double dt)))
           :target target
           :errors errors
           :latency (select-keys (hist/summary l) [:p50 :p90 :p99 :p999 :max])}
    step (assoc :step step)))

(defn- warmup-s ^double [^LoadEngine engine] (/ (- (.measureFromNanos engine) (.startNanos engine)) 1e9))

(defn- interval-target
  "The target rate over measured seconds [t0, t1) and the step at t1 (rate mode), else [nil nil]. An
  interval of no measured time (responses drained after the end) gets the target of the schedule's last
  millisecond before t1."
  [^LoadEngine engine phases t0 t1]
  (if-let [^RateSchedule s (.schedule engine)]
    (let [w (warmup-s engine)
          t0 (max 0.0 (min (double t0) (- (double t1) 1e-3)))
          target (schedule/target-rate s (+ w (double t0)) (+ w (double t1)))
          i (- (.phaseAtNanos s (long (* 1e9 (+ w (max 0.0 (- (double t1) 1e-9)))))) (- (.phases s) (count phases)))]
      [(when target (/ (Math/round (* 1000.0 (double target))) 1000.0)) (inc (long i))])
    [nil nil]))

(defn- live-steps
  "Watches the steps of a rate run while it goes: reports each step once it has settled (its time is over
  and every request of it answered or failed) through `on-step`, and asks `stop?` (given every ended
  step, settled or not, each with :settled? and :since-end-s) whether to stop the run now. Called with the
  run's final step maps, reports the steps not reported yet."
  [^LoadEngine engine phases connections on-step stop?]
  (let [reported (atom 0)
        ^RateSchedule s (.schedule engine)
        wp (- (.phases s) (count phases))
        w (warmup-s engine)]
    (fn
      ([final-steps]
       (when on-step (run! #(on-step (dissoc % :histograms)) (drop @reported final-steps))))
      ([]
      (let [now-s (- (/ (- (System/nanoTime) (.startNanos engine)) 1e9) w)
            ended (count (take-while #(<= (- (/ (.phaseStartNanos s (int (+ wp % 1))) 1e9) w) now-s) (range (count phases))))]
        (when (> ended (if stop? 0 @reported))
          (let [st (.steps engine)
                ms (mapv (fn [j]
                           (let [m (steps/step-map s st phases wp j now-s connections)
                                 end-s (+ (:start-s m) (:duration-s m))]
                             (assoc m :since-end-s (- now-s end-s)
                                    :settled? (and (zero? (:in-flight m)) (= (:sent m) (:planned m))))))
                         (range ended))]
            (loop []
              (let [m (get ms @reported)]
                (when (and m (:settled? m))
                  (when on-step (on-step (dissoc m :histograms :settled? :since-end-s)))
                  (swap! reported inc)
                  (recur))))
            (when (and stop? (stop? ms)) (.stop engine)))))))))

(defn- sinks
  "Where a collected interval goes: the run's totals, per-minute aggregator and .hlog (nil for none), or with
  `:rehearsal` copies of each that nobody reads (the .hlog written to nowhere)."
  ([total-l total-s minutes hlog] {:total-l total-l :total-s total-s :minutes minutes :hlog hlog})
  ([_rehearsal hlog?]
   (sinks (hist/histogram) (hist/histogram) (agg/aggregator) (when hlog? (hist/hlog-writer :discard 0)))))

(defn- take-interval!
  "Puts the interval histograms `l` (latency) and `s` (service) of [last-t, t) into `sinks`; returns its entry."
  [^LoadEngine engine {:keys [phases method] :as opts} {:keys [total-l total-s minutes hlog]} last-t t errors ^Histogram l ^Histogram s]
  (let [[target step] (interval-target engine phases last-t t)
        entry (interval-entry t (- (double t) (double last-t)) l target step errors)]
    (.add ^Histogram total-l l)
    (.add ^Histogram total-s s)
    (when (pos? (.getTotalCount l))
      (agg/add-histogram! minutes (System/currentTimeMillis) "request" (str/lower-case (name method)) l))
    (when (and hlog (pos? (.getTotalCount l))) (hist/hlog-interval! hlog last-t t l))
    entry))

(defn- rehearse!
  "Puts the warm-up's interval histograms through `take-interval!` into the rehearsal's `sinks`, so that the
  code the measured intervals run (histogram adds, percentiles, the .hlog's encoding) is compiled during the
  warm-up and not inside the recorded window, where the JIT shares the generator's core with its event loop."
  [^LoadEngine engine opts sinks ^Histogram l ^Histogram s]
  (.reset l)
  (.reset s)
  (.collectUnmeasured engine l s)
  (when (pos? (.getTotalCount l))
    (take-interval! engine opts sinks 0.0 0.0 0 l s)))

(defn- collect-loop
  "Waits for `done`, collecting an interval every `interval` seconds, and reporting each, the last (possibly
  partial) one included; returns the intervals. The interval histograms are reset and reused (each interval's
  figures are copied out: into the totals, the aggregator, the .hlog and the entry's percentiles), so the loop
  allocates no histogram (each ~100 KB) per interval."
  [^LoadEngine engine ^CompletableFuture done {:keys [interval] :as opts} total-l total-s hlog report minutes watch]
  (let [measured (sinks total-l total-s minutes hlog)
        rehearsal (sinks :rehearsal (some? hlog))
        l (hist/histogram) s (hist/histogram) wl (hist/histogram) ws (hist/histogram)]
    (loop [intervals [] last-t 0.0 last-errors 0]
      (let [finished? (try (.get done (nanos interval) TimeUnit/NANOSECONDS) true
                           (catch TimeoutException _ false))
            _ (.reset l)
            _ (.reset s)
            _ (.collect engine l s)
            t (max 0.0 (/ (- (min (System/nanoTime) (.endNanos engine)) (.measureFromNanos engine)) 1e9))
            errors (long (reduce + (vals (error-counts engine {}))))
            entry (take-interval! engine opts measured last-t t (- errors last-errors) l s)]
        (rehearse! engine opts rehearsal wl ws)
        (when-let [f (:on-histogram opts)] (f last-t t l))
        (let [intervals (if (or (pos? (:count entry)) (> t last-t)) (conj intervals entry) intervals)]
          (when (or (not finished?) (pos? (:count entry)) (> t last-t)) (report entry))
          (when (and watch (not finished?)) (watch))
          (when (and (not finished?) (:stop-when opts) ((:stop-when opts))) (.stop engine))
          (if finished? intervals (recur intervals t errors)))))))

(defn- io-busy
  "The engine's event loop threads' busy shares in the recorded window, rounded to 0.01; nil for a thread
  whose share is unknown."
  [^LoadEngine engine]
  (mapv #(when-not (Double/isNaN %) (/ (Math/round (* 100.0 (double %))) 100.0)) (.ioBusy engine)))

(defn- warnings [mode target achieved backlog connect-failures connect-causes errors step-list busy threads {:keys [host other]}]
  (cond-> []
    (and (= mode :rate) (< achieved (* 0.99 target)))
    (conj (format "ACHIEVED RATE %.1f/s IS BELOW THE TARGET %.1f/s: the generator or the server fell short" achieved (double target)))
    (and (= mode :rate) (some #(and % (>= (double %) warnings/busy-io-share)) busy))
    (conj (warnings/busy-io (reduce max (keep identity busy)) threads))
    (pos? connect-failures)
    (conj (warnings/connect-failed connect-failures backlog connect-causes host other))
    (and (pos? backlog) (zero? connect-failures))
    (conj (warnings/never-sent backlog))
    (= 1 (count step-list))
    (into (map #(str/replace % #"^STEP 1 \([^)]*\): " "")) (remove #(re-find #"ACHIEVED RATE|never sent" %) (:warnings (first step-list))))
    (pos? (reduce + (vals errors)))
    (conj (format "%d requests failed: %s" (reduce + (vals errors)) (pr-str (into {} (filter (comp pos? val)) errors))))
    (> (count step-list) 1)
    (into (mapcat :warnings step-list))))

(defn- slots
  "Requests a run can have in flight: connections, times the streams of each over HTTP/2."
  ^long [opts]
  (* (long (:connections opts)) (long (if (:http2? opts) (:streams opts) 1))))

(defn- advise-streams
  "Over HTTP/2, warnings advising more connections also name --streams: on `x`, a warning string, a step map
  (its :warnings), a list of them, or a fn of a step map (wrapped)."
  [x opts]
  (let [fix #(str/replace % #"raise --connections(?! or --streams)" "raise --connections or --streams")]
    (cond (not (:http2? opts)) x
          (nil? x) x
          (fn? x) (fn [m] (x (advise-streams m opts)))
          (string? x) (fix x)
          (map? x) (update x :warnings #(mapv fix %))
          :else (mapv #(advise-streams % opts) x))))

(defn execute
  "Runs `mode` (:rate or :max) with options (see herald.load/rate for the table); returns the result map."
  [mode opts]
  (let [opts (-> (options/validate mode opts) (protocol/validate (:tls? (request/parse-url (:url opts)))))
        engine (LoadEngine. (engine-config mode opts))
        total-l (hist/histogram) total-s (hist/histogram)
        minutes (agg/aggregator)
        report (or (:on-interval opts) (progress/reporter (:progress opts)))
        step-report (or (:on-step opts) (when (> (count (:phases opts)) 1) (progress/step-reporter (:progress opts))))]
    (try
      (let [_ (when-let [f (:before-start opts)] (f))
            started (System/currentTimeMillis)
            cpu0 (process-cpu-nanos)
            done (.start engine)
            _ (when-let [f (:on-start opts)] (f))
            hlog (when-let [p (:hlog opts)] (hist/hlog-writer p (+ started (long (* 1000 (:warmup opts))))))
            watch (when (and (= mode :rate) (or step-report (::stop? opts)))
                    (live-steps engine (:phases opts) (slots opts) (advise-streams step-report opts) (::stop? opts)))
            body #(collect-loop engine done opts total-l total-s hlog report minutes watch)
            intervals (if (:handle-interrupt? opts) (progress/with-interrupt #(.stop engine) body) (body))
            _ (when hlog (hist/hlog-close! hlog))
            cpu (- (process-cpu-nanos) cpu0)
            seconds (/ (- (.endNanos engine) (.measureFromNanos engine)) 1e9)
            busy (io-busy engine)
            status (status-map engine)
            connect-failures (.connectFailures engine)
            connect-causes (warnings/connect-causes #(.connectFailures engine ^ConnectFailure %))
            ;; requests due but never sent while connects failed count as connect errors (requests, not retries)
            errors (cond-> (error-counts engine status)
                     (pos? connect-failures) (update :connect + (.backlog engine)))
            achieved (/ (.getTotalCount total-l) (max 1e-9 seconds))
            host (:host (request/parse-url (:url opts)))
            other (.otherConnectError engine)
            step-list (when (= mode :rate)
                        (cond->> (steps/step-maps (.schedule engine) (.steps engine) (:phases opts)
                                                  (if (pos? (double (:warmup opts))) 1 0) seconds (slots opts))
                          (pos? connect-failures)
                          (mapv #(warnings/unsent-while-connects-failed
                                  % (warnings/causes-text connect-causes connect-failures host other)))))
            step-list (advise-streams step-list opts)
            _ (when watch (watch step-list))
            target (when (= mode :rate)
                     (let [[p & more] (:phases opts)]
                       (if (and (nil? more) (nil? (:to p)))
                         (double (:rate p))
                         (/ (Math/round (* 1000.0 (double (schedule/target-rate (.schedule engine) (warmup-s engine)
                                                                                  (+ (warmup-s engine) (max seconds 1e-9))))))
                            1000.0))))]
        {:herald.load/result 1
         :mode mode
         :meta (meta/run-meta (dissoc opts :on-interval :on-step :on-send ::stop? :phases :on-histogram :on-start :stop-when :before-start))
         :url (:url opts)
         :protocol (protocol/protocol-name opts (:tls? (request/parse-url (:url opts))))
         :streams (:streams opts)
         :tls (.tlsSession engine)
         :rate {:target target :achieved achieved}
         :requests (.getTotalCount total-l)
         :duration-s seconds
         :connections (:connections opts)
         :errors errors
         :status status
         :backlog (.backlog engine)
         :connect-failures connect-failures
         :connect-failure-causes connect-causes
         :generator {:threads (:threads opts) :cpu-s (/ cpu 1e9)
                     :cpu-us-per-request (when (pos? (.issued engine)) (/ (Math/round (/ cpu (.issued engine) 10.0)) 100.0))
                     :io-busy busy}
         :latency (hist/summary total-l)
         :service (hist/summary total-s)
         :histograms {:latency (hist/encode total-l) :service (hist/encode total-s)}
         :intervals intervals
         :per-minute (agg/rows minutes)
         :schedule (:phases opts)
         :steps step-list
         :warnings (advise-streams (warnings mode target achieved (.backlog engine) connect-failures connect-causes errors step-list
                                             busy (:threads opts) {:host host :other other})
                                   opts)})
      (finally (.close engine)))))
