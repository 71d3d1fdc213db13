(ns herald.load.impl.lab-cell
  "One cell of the lab: the target started fresh with its JDK and JVM options, readiness, warm-up, the
  sweep to the wall (herald.load's sweep, or for the feed workload capped feed runs), CPU per request and RSS
  of the target's process tree, GC pauses and allocation from its GC log, flame graphs during one step, and
  the target stopped (its whole process tree) whatever happened."
  (:require [clojure.java.io :as io]
            [clojure.java.shell :as sh]
            [clojure.string :as str]
            [herald.load.impl.feed-run :as feed-run]
            [herald.load.impl.lab-gc :as gc]
            [herald.load.impl.lab-proc :as proc]
            [herald.load.impl.lab-profile :as prof]
            [herald.load.impl.run :as run]
            [herald.load.impl.sweep :as sweep])
  (:import (java.lang ProcessHandle)
           (java.net URI)
           (java.time Instant)))

(set! *warn-on-reflection* true)

(defn- http-opts [spec url]
  (let [w (:workload spec)]
    (cond-> {:url url :connections (:connections w 16) :method (:method w :get) :progress :quiet :timeout 5}
      (:headers w) (assoc :headers (:headers w))
      (:body w) (assoc :body (:body w)))))

(defn- feed-opts [spec url]
  (let [u (URI. url)]
    (merge {:users 8 :progress :quiet :timeout 5}
           (dissoc (:workload spec) :kind :rates)
           {:host (.getHost u) :port (.getPort u)})))

(defn- load-run
  "One measured run of the cell's workload for `seconds` at `rate` (nil: as fast as it goes)."
  [spec url seconds rate]
  (if (= :feed (get-in spec [:workload :kind]))
    (feed-run/execute (cond-> (assoc (feed-opts spec url) :duration seconds) rate (assoc :rate-cap rate)))
    (run/execute (if rate :rate :max) (cond-> (assoc (http-opts spec url) :duration seconds) rate (assoc :rate rate)))))

(defn- step-summary [r]
  (select-keys (:latency r) [:p50 :p90 :p99 :p999 :max]))

(defn- feed-sweep
  "The wall of the feed workload: an uncapped run gives the max, then one run per rate (fractions of it, or
  the workload's :rates) capped at it, judged like the sweep's steps."
  [spec url {:keys [p99 p999]} {:keys [duration fractions stop-after-failures]}]
  (let [max-run (load-run spec url duration nil)
        max-rate (get-in max-run [:rate :achieved])
        rates (or (get-in spec [:workload :rates])
                  (mapv #(max 1 (Math/round (* (double %) (double max-rate)))) (or fractions sweep/default-fractions)))
        p999 (or p999 (* 2.0 (double p99)))
        steps (loop [[rate & more] rates out [] fails 0]
                (if (or (nil? rate) (>= fails (long stop-after-failures)))
                  out
                  (let [r (load-run spec url duration rate)
                        ok? (sweep/step-ok? (assoc-in r [:rate :target] (double rate)) p99 p999)
                        s {:rate rate :achieved (get-in r [:rate :achieved]) :p99 (get-in r [:latency :p99])
                           :p999 (get-in r [:latency :p999]) :errors (reduce + (vals (:errors r))) :ok? ok?
                           :latency (step-summary r) :requests (:requests r)}]
                    (recur more (conj out s) (if ok? 0 (inc fails))))))]
    {:max-rate max-rate :steps steps :wall (sweep/wall steps) :highest-passed (sweep/highest-passed steps)
     :warnings (vec (keep identity [(sweep/non-monotone-warning steps)]))
     :requests (+ (long (:requests max-run)) (reduce + 0 (map :requests steps)))}))

(defn- http-sweep [spec url {:keys [p99 p999]} {:keys [duration fractions stop-after-failures]}]
  (let [r (sweep/execute (cond-> (assoc (http-opts spec url) :duration duration :p99-bound p99
                                        :stop-after-failures stop-after-failures)
                           p999 (assoc :p999-bound p999)
                           fractions (assoc :fractions fractions)))
        run-steps (:steps (:run r))
        max-run (first (filter #(= "max" (:label %)) (:runs r)))]
    {:max-rate (:max-rate r) :wall (:wall r) :highest-passed (:highest-passed r) :warnings (:warnings r)
     :steps (mapv (fn [s rs] (assoc s :latency (step-summary rs) :requests (:requests rs))) (:steps r) run-steps)
     :requests (+ (long (or (:requests max-run) 0)) (long (or (:requests (:run r)) 0)))
     :run (:run r)}))

(defn- rss-sampler
  "Samples the tree's RSS every 250 ms into an atom of the peak until the returned fn is called (it returns
  the peak in bytes)."
  [p]
  (let [peak (atom 0) stop (atom false)
        t (doto (Thread. ^Runnable (fn [] (while (not @stop) (swap! peak max (proc/rss-bytes (proc/tree p))) (Thread/sleep 250))))
            (.setDaemon true) (.start))]
    (fn [] (reset! stop true) (.join t 1000) @peak)))

(defn- uptime-s
  "Seconds since JVM `pid` started (its process start time), for the GC log's uptime decorations."
  [pid]
  (let [h (.orElse (ProcessHandle/of (long pid)) nil)
        start (some-> ^ProcessHandle h .info .startInstant (.orElse nil))]
    (when start (/ (- (System/currentTimeMillis) (.toEpochMilli ^Instant start)) 1000.0))))

(defn vars-of
  "The placeholders of a cell's target command and URLs."
  [cell port jvm-opts dir]
  {"port" (str port) "java-home" (get-in cell [:jdk :home]) "java" (str (get-in cell [:jdk :home]) "/bin/java")
   "jvm-opts" (proc/shell-words jvm-opts) "cell-dir" (str dir)})

(defn measure!
  "Runs the cell's study against the target process `p` (ready at `url`) and returns its figures."
  [spec cell p url dir]
  (let [sw (:sweep spec)
        jpid (proc/java-pid p)
        _ (load-run spec url (:warmup sw) nil)
        cpu0 (proc/cpu-seconds (proc/tree p)) up0 (some-> jpid uptime-s) t0 (System/nanoTime)
        rss-peak (rss-sampler p)
        result (if (= :feed (get-in spec [:workload :kind]))
                 (feed-sweep spec url (:slo spec) sw)
                 (http-sweep spec url (:slo spec) sw))
        secs (/ (- (System/nanoTime) t0) 1e9)
        cpu (- (proc/cpu-seconds (proc/tree p)) cpu0) up1 (some-> jpid uptime-s)
        rss-end (proc/rss-bytes (proc/tree p))
        peak (rss-peak)
        pr (:profile spec)
        prate (when pr (* (double (:fraction pr)) (double (or (:wall result) (:highest-passed result) (* 0.5 (double (:max-rate result)))))))
        profile (cond (not pr) {:skipped "profiling is off in the spec (:profile false)"}
                      (nil? jpid) {:skipped "no JVM found in the target's process tree"}
                      :else (assoc (prof/profile! jpid (io/file (str dir) ".." ".." ".profiler") dir (:events pr) (:duration pr)
                                                  #(load-run spec url % (max 1.0 prate)))
                                   :rate prate))
        g (gc/read-log (io/file dir "gc.log"))]
    (when-let [r (:run result)] (spit (io/file dir "steps-result.edn") (pr-str r)))
    (-> (dissoc result :run)
        (assoc :sweep-s secs :cpu-s cpu
               :cpu-ms-per-request (when (pos? (long (:requests result))) (/ (* 1000.0 cpu) (double (:requests result))))
               :rss-peak-mb (/ peak 1048576.0) :rss-end-mb (/ rss-end 1048576.0)
               :gc (gc/summary g up0 up1) :gc-whole-run (dissoc (gc/summary g nil nil) :pauses-ms)
               :profile profile :java-pid jpid))))

(defn run-cell!
  "Runs cell `cell` of validated `spec` into directory `dir`: start, measure, stop. `register!` is called
  with the target's Process (and with nil once it is stopped) so that a shutdown hook can kill it. Returns
  the cell's result map (:status :ok, :skipped or :failed with :reason)."
  [spec cell dir register!]
  (let [{:keys [target jdk jvm]} cell
        base {:id (:id cell) :target (:name target) :jdk (dissoc jdk :home) :jdk-home (:home jdk) :jvm (:name jvm)
              :jvm-opts (:opts jvm) :started-at (str (Instant/now))}
        why-not (or (when (and (:min-jdk target) (< (long (:major jdk)) (long (:min-jdk target))))
                      (str "the target needs JDK " (:min-jdk target) " or later"))
                    (proc/jvm-accepts? (:home jdk) (:opts jvm)))]
    (if why-not
      (assoc base :status :skipped :reason why-not)
      (let [port (proc/free-port)
            opts (conj (vec (:opts jvm)) (gc/log-option (.getAbsolutePath (io/file dir "gc.log"))))
            vars (vars-of cell port opts (.getAbsolutePath (io/file dir)))
            url (proc/substitute (:url target) vars)
            env (merge (:env target) {"JAVA_HOME" (:home jdk) "JAVA" (get vars "java") "JAVA_OPTS" (str/join " " opts)
                                      "PORT" (str port) "HERALD_LAB_CELL" (:id cell)})
            p (proc/start! (proc/substitute (:cmd target) vars) (:dir target) env (io/file dir "target.log"))]
        (register! p)
        (spit (io/file dir "target.pid") (str (.pid p)))
        (try
          (proc/await-ready! p (proc/substitute (or (:ready target) (:url target)) vars) (:ready-timeout target 120) (io/file dir "target.log"))
          (let [version (when-let [c (:version-cmd target)]
                          (str/trim (:out (sh/sh "bash" "-c" (proc/substitute c vars) :env (merge (into {} (System/getenv)) env)))))]
            (merge base {:status :ok :url url :target-version version :jvm-opts-used opts}
                   (measure! spec cell p url dir)))
          (catch Exception e
            (assoc base :status :failed :reason (or (ex-message e) (str e)) :url url))
          (finally
            (let [gone? (proc/stop! p 10)]
              (register! nil)
              (when gone? (io/delete-file (io/file dir "target.pid") true)))))))))
