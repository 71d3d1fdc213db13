(ns herald.load.impl.lab
  "The lab: one command for the whole study. Runs every cell of a SPEC (target x JDK x JVM option set) one
  after the other, each into its own directory (cells/<id>/cell.edn once done), skips the cells a previous
  run finished (resume), kills the running target on Ctrl-C or SIGTERM (a shutdown hook), and writes the
  matrix's summary (summary.edn, summary.json) and report (report.html, PNGs)."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.pprint :as pp]
            [clojure.string :as str]
            [herald.load.impl.result-json :as json]
            [herald.load.impl.lab-cell :as cell]
            [herald.load.impl.lab-proc :as proc]
            [herald.load.impl.lab-report :as report]
            [herald.load.impl.lab-spec :as lspec]
            [herald.load.impl.meta :as meta])
  (:import (java.io File)
           (java.nio.file Files StandardCopyOption)
           (java.time Instant)))

(set! *warn-on-reflection* true)

(defn read-spec
  "Reads and validates the SPEC file at `path` (EDN); spec errors are ex-info :herald.load/bad-spec."
  [path]
  (let [f (io/file path)]
    (when-not (.isFile f) (throw (ex-info (str "no spec file " path) {:type :herald.load/bad-spec :key [] :value (str path)})))
    (lspec/validate (try (edn/read-string (slurp f))
                         (catch Exception e (throw (ex-info (str "spec " path " is not EDN: " (ex-message e)) {:type :herald.load/bad-spec :key []})))))))

(defn machine
  "The machine the lab ran on: cores, memory, kernel, CPU model, load average at the start."
  []
  (let [rd proc/read-proc]
    {:cores (.availableProcessors (Runtime/getRuntime))
     :memory-mb (some-> (re-find #"MemTotal:\s+(\d+)" (rd "/proc/meminfo")) second parse-long (quot 1024))
     :kernel (str/trim (rd "/proc/sys/kernel/osrelease"))
     :cpu (some-> (re-find #"model name\s*:\s*(.+)" (rd "/proc/cpuinfo")) second str/trim)
     :load-average (first (str/split (rd "/proc/loadavg") #" " 4))
     :os (str (System/getProperty "os.name") " " (System/getProperty "os.arch"))}))

(defn- cell-dir ^File [out id] (io/file out "cells" id))

(defn cell-key
  "What a cell's result depends on in SPEC, as a hash: its target, JDK and options and the spec's workload,
  SLO, sweep and profile. A kept result whose key differs (the spec changed) is run again."
  [spec cell]
  (hash [(:target cell) (get-in cell [:jdk :home]) (get-in cell [:jdk :version]) (:jvm cell)
         (select-keys spec [:workload :slo :sweep :profile])]))

(defn read-cell
  "The finished result of cell `c` under `out`, or nil when it has none, only a failed one (a rerun repeats
  it), or one made with another spec."
  [out spec c]
  (let [f (io/file (cell-dir out (:id c)) "cell.edn")]
    (when (.exists f)
      (let [r (edn/read-string (slurp f))]
        (when (and (#{:ok :skipped} (:status r)) (= (cell-key spec c) (:cell-key r))) r)))))

(defn- write-atomically! [^File f s]
  (io/make-parents f)
  (let [tmp (io/file (.getParentFile f) (str (.getName f) ".tmp"))]
    (spit tmp s)
    (Files/move (.toPath tmp) (.toPath f) (into-array [StandardCopyOption/REPLACE_EXISTING StandardCopyOption/ATOMIC_MOVE]))))

(defn- kill-leftovers!
  "Kills the targets a lab killed with SIGKILL left running (the pid in a cell's target.pid, and its
  descendants, recognised by HERALD_LAB_CELL=<cell id> in their environment); returns the pids killed."
  [out]
  (vec (for [^File d (some-> (io/file out "cells") .listFiles seq)
             :let [f (io/file d "target.pid")] :when (.exists f)
             :let [pid (parse-long (str/trim (slurp f)))
                   killed (when pid (proc/kill-leftover! pid (str "HERALD_LAB_CELL=" (.getName d) "\u0000")))
                   _ (io/delete-file f true)]
             k killed]
         k)))

(defn summary-of
  "The lab's summary: the spec, machine, versions and every cell's result, in cell order."
  [spec jdks cells results started]
  {:herald.load/lab 1
   :name (:name spec) :started-at started :finished-at (str (Instant/now))
   :machine (machine) :commit (meta/commit)
   :generator {:jvm (str (System/getProperty "java.vm.name") " " (System/getProperty "java.runtime.version"))}
   :jdks (mapv #(assoc % :java-version (proc/java-version-text (:home %))) jdks)
   :slo (:slo spec) :sweep (:sweep spec) :workload (:workload spec) :profile (:profile spec)
   :targets (mapv #(select-keys % [:name :cmd :url]) (:targets spec))
   :jvm-opts (:jvm-opts spec)
   :cells (vec (keep #(get results (:id %)) cells))})

(defn write-summary!
  "Writes summary.edn, summary.json, report.html and the PNG charts of `summary` into `out`; returns the paths."
  [out summary]
  (write-atomically! (io/file out "summary.edn") (with-out-str (pp/pprint summary)))
  (write-atomically! (io/file out "summary.json") (json/write-str summary))
  (into [(str (io/file out "summary.edn")) (str (io/file out "summary.json"))]
        (report/write! out summary)))

(defn execute
  "Runs the lab of validated `spec` into directory `out`. Options: :dry-run? (only list the cells), :log (a
  fn of a line of progress). Returns the summary map (with :resumed, the ids of cells kept from an earlier
  run, and :interrupted? when a shutdown stopped it)."
  [spec out {:keys [dry-run? log] :or {log #(binding [*out* *err*] (println %))}}]
  (let [jdks (lspec/resolve-jdks (:jdks spec))
        cells (lspec/cells spec jdks)
        out (.getAbsoluteFile (io/file out))]
    (if dry-run?
      {:cells (mapv #(select-keys % [:id]) cells) :jdks jdks}
      (let [started (str (Instant/now))
            _ (doseq [pid (kill-leftovers! out)] (log (str "lab: killed target " pid " left by an earlier run")))
            kept (into {} (keep (fn [c] (when-let [r (read-cell out spec c)] [(:id c) r])) cells))
            running (atom nil)
            stopping (atom false)
            hook (Thread. ^Runnable (fn []
                                      (reset! stopping true)
                                      (when-let [p @running] (proc/stop! p 3))))]
        (.addShutdownHook (Runtime/getRuntime) hook)
        (try
          (when (seq kept) (log (str "lab: " (count kept) " of " (count cells) " cells done earlier (kept): " (str/join " " (keys kept)))))
          (let [results (reduce (fn [acc c]
                                  (if (or (contains? acc (:id c)) @stopping)
                                    acc
                                    (let [dir (cell-dir out (:id c))
                                          _ (log (str "lab: cell " (:id c) " ..."))
                                          r (assoc (cell/run-cell! spec c dir #(reset! running %)) :cell-key (cell-key spec c))]
                                      (if @stopping
                                        acc
                                        (do (write-atomically! (io/file dir "cell.edn") (with-out-str (pp/pprint r)))
                                            (log (str "lab: cell " (:id c) " " (name (:status r))
                                                      (if (= :ok (:status r))
                                                        (str " wall=" (or (:wall r) "none") " max=" (some->> (:max-rate r) (format "%.0f")))
                                                        (str ": " (:reason r)))))
                                            (assoc acc (:id c) r))))))
                                kept cells)
                summary (summary-of spec jdks cells results started)]
            (write-summary! out summary)
            (assoc summary :resumed (vec (keys kept)) :interrupted? @stopping))
          (finally
            (try (.removeShutdownHook (Runtime/getRuntime) hook) (catch IllegalStateException _ nil))))))))
