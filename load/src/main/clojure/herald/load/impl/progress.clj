(ns herald.load.impl.progress
  "Live progress: one line per interval on the terminal, JSON lines, or nothing; and Ctrl-C handling."
  (:require [herald.load.impl.histogram :as hist]
            [herald.load.impl.result-json :as json])
  (:import (sun.misc Signal SignalHandler)))

(set! *warn-on-reflection* true)

(defn terminal?
  "True when stderr looks like an interactive terminal (Console.isTerminal on JDK 22+)."
  []
  (if-let [c (System/console)]
    (try (boolean (.invoke (.getMethod (class c) "isTerminal" (make-array Class 0)) c (object-array 0)))
         (catch Exception _ true))
    false))

(defn- text-line [{:keys [t rate target errors latency]}]
  (format "[%6.1fs] %9.1f req/s%s  errors %d  p50 %s  p99 %s  max %s"
          (double t) (double rate)
          (if target (format " (target %.1f)" (double target)) "")
          (long errors)
          (if (:p50 latency) (hist/format-ms (:p50 latency)) "-")
          (if (:p99 latency) (hist/format-ms (:p99 latency)) "-")
          (if (:max latency) (hist/format-ms (:max latency)) "-")))

(defn reporter
  "A fn of an interval map (:t :rate :target :errors :latency) printing progress as `mode` says:
  :quiet, :text (stderr), :json (JSON lines on stdout), or :auto (:text on a terminal, else :quiet)."
  [mode]
  (case (if (= mode :auto) (if (terminal?) :text :quiet) mode)
    :quiet (fn [_])
    :text (fn [m] (binding [*out* *err*] (println (text-line m)) (flush)))
    :json (fn [m] (println (json/write-str (assoc m :type "interval"))) (flush))))

(defn- step-line [{:keys [step label target-rate achieved requests errors connection-waits latency service warnings]}]
  (str (format "[step %d %s] %.1f req/s (target %.1f)  requests %d  errors %d  waits %d  p50 %s  p99 %s  p99.9 %s  service p99 %s"
               (long step) label (double achieved) (double target-rate) (long requests) (long (reduce + (vals errors)))
               (long connection-waits)
               (if (:p50 latency) (hist/format-ms (:p50 latency)) "-") (if (:p99 latency) (hist/format-ms (:p99 latency)) "-")
               (if (:p999 latency) (hist/format-ms (:p999 latency)) "-") (if (:p99 service) (hist/format-ms (:p99 service)) "-"))
       (apply str (for [w warnings] (str "\nWARNING: " w)))))

(defn step-reporter
  "A fn of a settled step's map printing it as `mode` says (as `reporter`; JSON lines have \"type\":\"step\")."
  [mode]
  (case (if (= mode :auto) (if (terminal?) :text :quiet) mode)
    :quiet (fn [_])
    :text (fn [m] (binding [*out* *err*] (println (step-line m)) (flush)))
    :json (fn [m] (println (json/write-str (assoc m :type "step"))) (flush))))

(defn with-interrupt
  "Calls (f) with Ctrl-C (SIGINT) bound to `on-interrupt` for the duration; a second Ctrl-C exits at once.
  Restores the previous handler afterwards. Where signals cannot be handled, just calls (f)."
  [on-interrupt f]
  (let [hits (atom 0)
        handler (reify SignalHandler
                  (handle [_ _]
                    (when (> (swap! hits inc) 1) (.halt (Runtime/getRuntime) 130))
                    (binding [*out* *err*] (println "\ninterrupted: stopping, writing results so far (Ctrl-C again to quit now)"))
                    (on-interrupt)))
        previous (try (Signal/handle (Signal. "INT") handler) (catch Exception _ nil))]
    (try (f)
         (finally (when previous (try (Signal/handle (Signal. "INT") previous) (catch Exception _ nil)))))))
