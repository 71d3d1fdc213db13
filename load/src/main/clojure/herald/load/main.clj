(ns herald.load.main
  "The herald-load command line: rate, max, sweep, feed, lab, report, compare, merge and aggregate subcommands."
  (:require [clojure.string :as str]
            [clojure.tools.cli :as cli]
            [herald.load :as load]
            [herald.load.impl.cli :as c]
            [herald.load.impl.result-json :as json]
            [herald.load.impl.output :as output])
  (:gen-class))

(set! *warn-on-reflection* true)

(def ^{:doc "The top-level usage text."} usage-head
  "herald-load: constant-rate HTTP load without coordinated omission, and its analysis.

Usage: herald-load COMMAND [options] [args]

Commands:
  rate URL      open-loop rate (--rate N, or steps/ramps 1000:30s,2000:30s / 1000..5000:60s on the
                same connections): latency from the intended send time, per-step figures
  max URL       closed-loop, as fast as possible (like wrk)
  sweep URL     steps at fractions of the max on the same connections; the highest rate under --p99
  feed          the reference news feed workload against a feed service (--host, --port)
  report R...   HTML report with inline SVG and PNG plots of result files (overlaid) into --out
  compare R...  side-by-side table of result files (and an overlaid report with --out)
  merge R...    one result from generators that ran side by side (histograms merged exactly)
  lab SPEC      the study in one command: every target x JDK x JVM option set of SPEC.edn started
                fresh, swept to its wall under an SLO, with CPU, RSS, GC pauses, flame graphs, one report
  agent         a generator that a coordinator drives: rate or feed with --agents host:port,...
                splits the load over agents started at one instant, and merges their histograms
  aggregate LOG per-minute count/median/p95/p99/max of a reference performance log (- for stdin)

Run `herald-load COMMAND --help` for a command's options. Results go to --out DIR: result.edn,
summary.json, latency.hgrm, service.hgrm, per-minute.csv/.edn, steps.csv/.json, report.html, *.png.")

(defn- finish! [r opts]
  (let [r (cond-> r (:label opts) (assoc :label (:label opts)))]
    (when-let [dir (:out opts)]
      (doseq [p (load/write-result! dir r)] (binding [*out* *err*] (println "wrote" p))))
    (if (= :json (:progress opts))
      (do (println (json/write-str (assoc (output/summary r) :type "summary")))
          (flush)
          (binding [*out* *err*] (run! println (c/step-lines r)) (println (c/summary-line r)) (flush)))
      (do (println (load/summary-text r))
          (run! println (c/step-lines r))
          (println (c/summary-line r))
          (flush)))))

(defn- run-command [cmd args]
  (let [{:keys [options arguments errors summary]} (cli/parse-opts args (c/option-specs cmd))]
    (cond
      (:help options) (do (println (str "Usage: herald-load " (name cmd) " " (c/arg-help cmd) "\n\nOptions:\n" summary)) 0)
      errors (do (binding [*out* *err*] (run! println errors) (println "see: herald-load" (name cmd) "--help")) 1)
      :else (c/dispatch cmd options arguments finish!))))

(defn run-cli
  "Runs the command line `args`; returns the exit code (0 ok, 1 usage error, 2 failure: also a rate or max run
  in which every request failed)."
  [args]
  (let [[cmd & more] args
        cmd (some-> cmd keyword)]
    (cond
      (or (nil? cmd) (#{:-h :--help :help} cmd)) (do (println usage-head) (if cmd 0 1))
      (not (c/commands cmd)) (do (binding [*out* *err*] (println "unknown command:" (name cmd)) (println usage-head)) 1)
      :else
      (try (run-command cmd more)
           (catch clojure.lang.ExceptionInfo e
             (binding [*out* *err*] (println "herald-load:" (ex-message e)))
             (if (#{:herald.load/bad-option :herald.load/bad-spec} (:type (ex-data e))) 1 2))))))

(defn -main
  "Entry point of bin/herald-load and java -jar herald-load.jar."
  [& args]
  (let [code (run-cli args)]
    (shutdown-agents)
    (System/exit code)))
