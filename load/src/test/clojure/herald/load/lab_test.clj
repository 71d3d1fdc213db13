(ns herald.load.lab-test
  "The lab: spec mistakes refused before anything starts, GC pauses parsed from a real JVM's GC log, and a
  tiny real lab (the JDK HTTP server as a child JVM target, two GCs, very short steps) run in a child
  process, killed mid-run (the target it was measuring dies with it), and resumed: only the missing cell
  runs, the report and per-cell results are written, no target is left behind."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.load :as load]
            [herald.load.impl.lab :as lab]
            [herald.load.impl.lab-gc :as gc]
            [herald.load.impl.lab-proc :as proc]
            [herald.load.impl.lab-spec :as lspec]
            [herald.load.main :as main])
  (:import (java.io File)
           (java.lang ProcessHandle)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- tmp-dir ^File [] (.toFile (Files/createTempDirectory "herald-lab-test" (make-array FileAttribute 0))))

(def ^:private classes-dir
  "The directory holding the test's compiled HelloServer (the target's classpath)."
  (delay (-> (io/resource "herald/load/lab/HelloServer.class") io/file .getParentFile .getParentFile .getParentFile .getParentFile str)))

(defn- spec [marker]
  {:name "tiny"
   :targets [{:name marker :url "http://127.0.0.1:{port}/" :ready-timeout 60
              ;; the JDK by placeholder, the options by environment (JAVA_OPTS, space-separated: no globbing)
              :cmd (str "set -f; exec {java} $JAVA_OPTS -cp " @classes-dir " herald.load.lab.HelloServer {port} 256")}]
   :common-opts ["-Xmx64m" "-Xmn4m" "-XX:TieredStopAtLevel=1"]
   :jvm-opts [{:name "parallel" :opts ["-XX:+UseParallelGC"]} {:name "g1" :opts ["-XX:+UseG1GC"]}]
   :jdks [(System/getProperty "java.home")]
   :workload {:kind :http :connections 2}
   :slo {:p99 2000 :p999 4000}
   :sweep {:warmup 0.5 :duration 0.6 :fractions [0.2 0.4]}
   :profile {:fraction 0.5 :duration 1}})

(defn- spec-error [s]
  (try (lspec/validate s) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest spec-mistakes-name-the-key-and-start-nothing
  (let [dir (tmp-dir)
        flag (io/file dir "started")
        good (assoc-in (spec "x") [:targets 0 :cmd] (str "touch " flag))]
    (is (map? (lspec/validate good)))
    (doseq [[s k] [[(assoc good :slo {:p99 0}) [:slo :p99]]
                   [(assoc good :slo {:p99 5 :p999 "9"}) [:slo :p999]]
                   [(dissoc good :slo) [:slo]]
                   [(assoc good :targetz []) [:targetz]]
                   [(assoc good :targets []) [:targets]]
                   [(assoc-in good [:targets 0 :url] "127.0.0.1:{port}") [:targets 0 :url]]
                   [(assoc-in good [:targets 0 :cmd] nil) [:targets 0 :cmd]]
                   [(assoc-in good [:targets 0 :colour] "red") [:targets 0]]
                   [(update good :targets conj (first (:targets good))) [:targets]]
                   [(assoc-in good [:jvm-opts 1 :opts] "-XX:+UseG1GC") [:jvm-opts 1 :opts]]
                   [(assoc-in good [:jvm-opts 0 :name] "has space") [:jvm-opts 0 :name]]
                   [(assoc good :jdks "all") [:jdks]]
                   [(assoc good :workload {:kind :grpc}) [:workload :kind]]
                   [(assoc good :workload {:method :fetch}) [:workload :method]]
                   [(assoc-in good [:sweep :duration] -1) [:sweep :duration]]
                   [(assoc-in good [:sweep :fractions] []) [:sweep :fractions]]
                   [(assoc good :profile {:events [:wall]}) [:profile :events]]]]
      (let [e (spec-error s)]
        (is (= :herald.load/bad-spec (:type e)) (pr-str k))
        (is (= k (:key e)) (pr-str k))))
    (testing "a JDK that is not there is refused before any cell starts"
      (let [e (try (load/lab (lspec/validate (assoc good :jdks ["/nonexistent/jdk"])) (io/file dir "out")) nil
                   (catch clojure.lang.ExceptionInfo e (ex-data e)))]
        (is (= [:jdks 0] (:key e)))))
    (testing "the command line: a bad spec file is a usage error (exit 1), nothing started"
      (let [f (io/file dir "bad.edn")]
        (spit f (pr-str (assoc good :slo {:p99 -1})))
        (is (= 1 (binding [*err* (java.io.StringWriter.)] (main/run-cli ["lab" (str f) "-o" (str (io/file dir "out"))]))))
        (spit f "{:targets [")
        (is (= 1 (binding [*err* (java.io.StringWriter.)] (main/run-cli ["lab" (str f)]))))))
    (is (not (.exists flag)) "no target command ran")
    (testing "the {jvm-opts} placeholder is shell-quoted"
      (is (= "-Xmx64m '-Xlog:gc*:file=/a b/gc.log'" (proc/shell-words ["-Xmx64m" "-Xlog:gc*:file=/a b/gc.log"])))
      (is (= "java -Xmx1g 7 {other}" (proc/substitute "{java} {jvm-opts} {port} {other}" {"java" "java" "jvm-opts" "-Xmx1g" "port" "7"}))))))

(deftest gc-pauses-from-a-real-gc-log
  (let [dir (tmp-dir)
        log (io/file dir "gc.log")
        java (str (System/getProperty "java.home") "/bin/java")
        ;; a JVM that allocates 200 MB through a 16 MB heap: young collections for sure
        p (.start (doto (ProcessBuilder. ^java.util.List (vector java "-XX:+UseG1GC" "-Xmx16m" (gc/log-option (str log))
                                                                  "-cp" @classes-dir "herald.load.lab.Allocate" "200"))
                    (.redirectErrorStream true) (.redirectOutput (io/file dir "out.txt"))))]
    (is (.waitFor p 120 TimeUnit/SECONDS))
    (let [g (gc/read-log log)
          s (gc/summary g nil nil)]
      (is (pos? (:count s)) (slurp log))
      (is (every? #(str/starts-with? (:name %) "Pause") (:pauses g)))
      (is (= (:count s) (count (distinct (map (juxt :gc :name) (:pauses g))))) "one entry per collection and pause")
      (is (pos? (:max-ms s)))
      (is (pos? (:collections s)))
      (is (> (:alloc-mb-per-s s) 1.0) "heap growth between collections"))
    (testing "generational ZGC: the young and old pauses of one collection are two pauses"
      (let [g (gc/parse (str "[0.588s][info][gc,phases   ] GC(0) Y: Pause Mark Start (Major) 0.090ms\n"
                             "[0.614s][info][gc,phases   ] GC(0) Y: Pause Mark End 0.024ms\n"
                             "[0.632s][info][gc,phases   ] GC(0) O: Pause Mark End 0.021ms\n"
                             "[0.645s][info][gc          ] GC(0) Major Collection (Warmup) 8M(12%)->18M(28%) 0.063s\n"))]
        (is (= ["Y: Pause Mark Start (Major)" "Y: Pause Mark End" "O: Pause Mark End"] (map :name (:pauses g))))
        (is (= [{:t 0.645 :gc 0 :before (* 8 1048576) :after (* 18 1048576)}] (:heap g)))))))

(defn- lab-process ^Process [spec-file out]
  (let [java (str (System/getProperty "java.home") "/bin/java")]
    (.start (doto (ProcessBuilder. ^java.util.List (vector java "-XX:TieredStopAtLevel=1" "-cp" (System/getProperty "java.class.path")
                                                    "clojure.main" "-m" "herald.load.main" "lab" (str spec-file) "-o" (str out)))
              (.redirectErrorStream true) (.redirectOutput (io/file (.getParentFile (io/file (str out))) "lab-child.log"))))))

(defn- marked-pids
  "Live processes with HERALD_LAB_CELL=<a cell of target `marker`> in their environment."
  [marker]
  (vec (for [^ProcessHandle h (iterator-seq (.iterator (ProcessHandle/allProcesses)))
             :when (str/includes? (proc/read-proc (str "/proc/" (.pid h) "/environ")) (str "HERALD_LAB_CELL=" marker "__"))]
         (.pid h))))

(defn- wait-for [pred secs]
  (let [deadline (+ (System/nanoTime) (long (* 1e9 secs)))]
    (loop [] (or (pred) (if (> (System/nanoTime) deadline) false (do (Thread/sleep 100) (recur)))))))

(deftest a-tiny-lab-is-interrupted-and-resumed
  (let [dir (tmp-dir)
        marker (str "hello" (System/nanoTime))
        s (spec marker)
        spec-file (io/file dir "spec.edn")
        out (io/file dir "lab")
        jdk (lspec/jdk-name (lspec/jdk-info (System/getProperty "java.home")))
        [first-id second-id] (map #(str marker "__" jdk "__" %) ["parallel" "g1"])
        cell-file #(io/file out "cells" % "cell.edn")]
    (spit spec-file (pr-str s))
    (testing "the lab in a child process, stopped (SIGTERM, as Ctrl-C) while the second cell's target runs"
      (let [child (lab-process spec-file out)]
        (try
          (is (wait-for #(and (.exists ^File (cell-file first-id)) (.exists (io/file out "cells" second-id "target.pid"))) 150)
              (proc/tail (io/file dir "lab-child.log") 20))
          (finally (.destroy child) (.waitFor child 30 TimeUnit/SECONDS)))
        (is (wait-for #(empty? (marked-pids marker)) 10) "the shutdown hook killed the running target")
        (is (.exists ^File (cell-file first-id)) "the finished cell is kept")
        (is (not (.exists ^File (cell-file second-id))) "the interrupted cell left no result")))
    (testing "a rerun into the same directory runs only the missing cell"
      (let [lines (atom [])
            r (load/lab (lspec/validate s) out {:log #(swap! lines conj %)})]
        (is (= [first-id] (:resumed r)))
        (is (some #(str/includes? % (str "cell " second-id " ...")) @lines))
        (is (not-any? #(str/includes? % (str "cell " first-id " ...")) @lines) "the finished cell did not run again")
        (is (= [first-id second-id] (map :id (:cells r))))
        (doseq [c (:cells r)]
          (testing (:id c)
            (is (= :ok (:status c)) (:reason c))
            (is (pos? (:max-rate c)))
            (is (seq (:steps c)))
            (is (pos? (:cpu-ms-per-request c)) "CPU of the target's tree from /proc")
            (is (> (:rss-peak-mb c) 10.0) "RSS of a JVM")
            (is (pos? (get-in c [:gc-whole-run :count])) "pauses from the target's GC log")
            (is (<= (get-in c [:gc :count]) (get-in c [:gc-whole-run :count])))
            (is (every? #(or (:file %) (string? (:skipped %))) (map (:profile c) [:cpu :alloc])) "a flame graph or the reason why not")
            (doseq [ev [:cpu :alloc] :let [f (get-in c [:profile ev :file])] :when f]
              (is (str/includes? (slurp (io/file out "cells" (:id c) f)) "<html")))))
        (is (= #{"parallel" "g1"} (set (map :jvm (:cells r)))))
        (let [html (slurp (io/file out "report.html"))]
          (is (str/includes? html "Wall per cell"))
          (is (str/includes? html "<svg"))
          (is (str/includes? html (str (get-in r [:machine :cores])))))
        (is (= 2 (count (:cells (edn/read-string (slurp (io/file out "summary.edn")))))))
        (is (.exists (io/file out "summary.json")))
        (is (.exists (io/file out "lab-heatmap.png")))
        (is (empty? (marked-pids marker)) "no target left running")
        (testing "a kept cell counts only for the spec that made it"
          (let [v (lspec/validate s)
                c (first (lspec/cells v [(assoc (lspec/jdk-info (System/getProperty "java.home")) :name jdk)]))]
            (is (= first-id (:id c)))
            (is (some? (lab/read-cell out v c)))
            (is (nil? (lab/read-cell out (assoc-in v [:slo :p99] 1) c)) "another SLO: the cell runs again")))))))
