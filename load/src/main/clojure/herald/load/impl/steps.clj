(ns herald.load.impl.steps
  "Per-step figures of a scheduled rate run: target against achieved rate, latency and service time,
  errors, requests that waited for a connection; the step warnings; per-step CSV; and one result-like
  view per step for tables and overlaid plots."
  (:require [clojure.string :as str]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.schedule :as schedule]
            [herald.load.impl.warnings :as warnings])
  (:import (herald.load.client ErrorKind)
           (herald.load.engine RateSchedule StepStats)))

(set! *warn-on-reflection* true)

(defn- round3 [x] (/ (Math/round (* 1000.0 (double x))) 1000.0))

(defn- errors-of [^StepStats st i]
  (assoc (into {} (for [^ErrorKind k (ErrorKind/values)] [(keyword (.label k)) (.errors st i k)]))
         :status (.statusErrors st i)))

(def warn-share
  "The share of a step's requests that waited for a connection, or left late, above which it is warned about."
  0.05)

(defn- shortfall-warnings [{:keys [step label target-rate achieved sent unsent connection-waits late-sends service complete?]} connections]
  (let [tag (format "STEP %d (%s)" (long step) label)
        waits-share (if (pos? sent) (/ (double connection-waits) sent) 0.0)
        needed (when-let [mean (:mean service)] (long (Math/ceil (* (double target-rate) (/ (double mean) 1000.0)))))]
    (cond-> []
      (and complete? (< achieved (* 0.99 (double target-rate))))
      (conj (format "%s: ACHIEVED RATE %.1f/s IS BELOW THE TARGET %.1f/s: the generator or the server fell short" tag (double achieved) (double target-rate)))
      (pos? unsent)
      (conj (str tag ": " (warnings/never-sent unsent)))
      (> waits-share warn-share)
      (conj (str tag ": " (warnings/waited connection-waits (* 100 waits-share) connections needed)))
      (and (pos? sent) (> (/ (double late-sends) sent) warn-share))
      (conj (format "%s: %d requests (%.1f%%) LEFT MORE THAN 5 MS LATE WITH A CONNECTION FREE: the generator (or the machine) could not keep up: give it more threads or cores"
                    tag (long late-sends) (/ (* 100.0 late-sends) sent))))))

(defn step-map
  "The figures of measured step `j` (engine phase `j + warmup-phases`) from snapshot `st`. `elapsed-s` is
  the measured time run so far (shorter than the schedule when stopped early); `now-s` the time since the
  measured start, for the settle check."
  [^RateSchedule sched ^StepStats st phases warmup-phases j elapsed-s connections]
  (let [i (+ (long warmup-phases) (long j))
        t0 (/ (.phaseStartNanos sched (int warmup-phases)) 1e9)
        start (- (/ (.phaseStartNanos sched (int i)) 1e9) t0)
        end (- (/ (.phaseStartNanos sched (inc (int i))) 1e9) t0)
        ran (max 0.0 (- (min end (double elapsed-s)) start))
        phase (nth phases j)
        lat (.latency st i) svc (.service st i)
        completed (.completed st i)
        m {:step (inc (long j)) :label (schedule/phase-label phase)
           :target (select-keys phase [:rate :to]) :start-s (round3 start) :duration-s (round3 ran)
           :target-rate (or (schedule/target-rate sched (+ t0 start) (+ t0 start (max ran 1e-9))) (schedule/mean-rate phase))
           :complete? (>= ran (- end start 1e-9))
           :planned (.planned st i) :sent (.sent st i) :requests completed
           :achieved (/ completed (max 1e-9 ran))
           :throughput (/ (.answeredDuring st i) (max 1e-9 ran))
           :unsent (.unsent st i) :in-flight (.inFlight st i) :connection-waits (.connectionWaits st i)
           :late-sends (.lateSends st i)
           :errors (errors-of st i)
           :latency (hist/summary lat) :service (hist/summary svc)
           :histograms {:latency (hist/encode lat) :service (hist/encode svc)}}]
    (assoc m :warnings (cond-> (shortfall-warnings m connections)
                         (not (:complete? m)) (conj (format "STEP %d (%s): stopped early after %.2fs of %.2fs" (:step m) (:label m) ran (- end start)))))))

(defn step-maps
  "Every measured step that started within `elapsed-s`, from snapshot `st`."
  [^RateSchedule sched ^StepStats st phases warmup-phases elapsed-s connections]
  (vec (for [j (range (count phases))
             :let [m (step-map sched st phases warmup-phases j elapsed-s connections)]
             :while (or (zero? j) (pos? (:duration-s m)))]
         m)))

(defn unfinished
  "Requests of step `m` neither answered nor failed yet (in flight or waiting in the generator)."
  [m]
  (max 0 (- (long (:planned m)) (long (:requests m)) (long (reduce + (vals (dissoc (:errors m) :status)))))))

(def csv-columns
  "The columns of steps.csv, in order: [name fn-of-step]."
  [["step" :step] ["label" :label] ["start_s" :start-s] ["duration_s" :duration-s]
   ["target_from_rps" #(get-in % [:target :rate])] ["target_to_rps" #(or (get-in % [:target :to]) (get-in % [:target :rate]))]
   ["target_rps" #(round3 (:target-rate %))] ["achieved_rps" #(round3 (:achieved %))]
   ["throughput_rps" #(round3 (:throughput %))]
   ["planned" :planned] ["sent" :sent] ["requests" :requests] ["unsent" :unsent] ["connection_waits" :connection-waits] ["late_sends" :late-sends]
   ["errors" #(reduce + (vals (:errors %)))]
   ["p50_ms" #(get-in % [:latency :p50])] ["p90_ms" #(get-in % [:latency :p90])] ["p99_ms" #(get-in % [:latency :p99])]
   ["p999_ms" #(get-in % [:latency :p999])] ["max_ms" #(get-in % [:latency :max])]
   ["service_p50_ms" #(get-in % [:service :p50])] ["service_p99_ms" #(get-in % [:service :p99])]
   ["service_max_ms" #(get-in % [:service :max])] ["complete" :complete?]])

(defn csv
  "Steps as CSV text with a header row (latencies in ms, empty when a step has no responses)."
  [steps]
  (str/join "\n" (cons (str/join "," (map first csv-columns))
                       (for [s steps] (str/join "," (map (fn [[_ f]] (let [v (f s)] (if (nil? v) "" (str/replace (str v) "," ";")))) csv-columns))))))

(defn step-results
  "One result-like map per step of run `r` (label, mode, rate, requests, errors, latency, service,
  histograms, intervals within the step), for comparison tables and overlaid plots."
  [r]
  (vec (for [s (:steps r)]
         {:herald.load/result 1 :mode :rate :label (str "step " (:step s) " " (:label s))
          :url (:url r) :meta (:meta r) :connections (:connections r)
          :rate {:target (:target-rate s) :achieved (:achieved s)}
          :requests (:requests s) :duration-s (:duration-s s) :errors (:errors s)
          :latency (:latency s) :service (:service s) :histograms (:histograms s)
          :intervals (filterv #(< (:start-s s) (:t %) (+ (:start-s s) (:duration-s s) 1e-6)) (:intervals r))
          :warnings (:warnings s)})))

(defn text-table
  "The per-step table of a text summary."
  [steps]
  (let [fmt "  %4s %-16s %10s %10s %8s %9s %9s %9s %9s %9s %6s %6s\n"
        ms #(if % (hist/format-ms %) "-")]
    (str "\n  Steps (latency corrected from intended send time; service from actual send):\n"
         (format fmt "step" "target" "target/s" "achieved/s" "requests" "p50" "p99" "p99.9" "max" "svc p99" "errors" "waits")
         (str/join (for [s steps]
                     (format fmt (:step s) (:label s) (format "%.1f" (double (:target-rate s))) (format "%.1f" (double (:achieved s)))
                             (:requests s) (ms (get-in s [:latency :p50])) (ms (get-in s [:latency :p99]))
                             (ms (get-in s [:latency :p999])) (ms (get-in s [:latency :max])) (ms (get-in s [:service :p99]))
                             (reduce + (vals (:errors s))) (:connection-waits s)))))))
