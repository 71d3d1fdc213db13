(ns herald.feed.lab-test
  "^:integration herald-load's lab with the feed workload against the real feed service: one cell (this JDK,
  ParallelGC) whose target is herald.feed.Main in a child JVM on the embedded profile, its data in the cell's
  directory, swept with very short capped runs. The cell must finish with a measured max, capped steps that each
  ran requests, CPU and RSS of the feed's process and its GC log read; the feed must have stored what the
  workload wrote, and no feed is left running."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.load :as load])
  (:import (java.io File)
           (java.lang ProcessHandle)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(set! *warn-on-reflection* true)

(defn- tmp-dir ^File [] (.toFile (Files/createTempDirectory "herald-feed-lab" (make-array FileAttribute 0))))

(defn- marked-pids
  "Pids of live processes whose command line holds marker."
  [marker]
  (->> (iterator-seq (.iterator (ProcessHandle/allProcesses)))
       (filter (fn [^ProcessHandle h]
                 (some-> (.orElse (.commandLine (.info h)) nil) (str/includes? marker))))
       (map #(.pid ^ProcessHandle %))))

(defn- spec [marker]
  {:name "feed-tiny"
   :targets [{:name "feed" :url "http://127.0.0.1:{port}/health" :ready-timeout 120
              ;; the marker names this test's feed among the machine's processes
              :cmd (str "set -f; exec {java} $JAVA_OPTS -Dherald.lab.marker=" marker
                        " -cp " (child-jvm/classpath)
                        " herald.feed.Main --port {port} --host 127.0.0.1 --profile embedded --data-dir {cell-dir}/data")}]
   :common-opts ["-Xmx512m" "-XX:TieredStopAtLevel=1" "--enable-native-access=ALL-UNNAMED"]
   :jvm-opts [{:name "parallel" :opts ["-XX:+UseParallelGC"]}]
   :jdks [(System/getProperty "java.home")]
   :workload {:kind :feed :users 4 :search-share 0.25}
   :slo {:p99 5000 :p999 10000}
   :sweep {:warmup 2 :duration 2 :fractions [0.5]}
   :profile false})

(deftest ^:integration the-lab-sweeps-the-real-feed
  (let [dir (tmp-dir)
        marker (str "feedlab" (System/nanoTime))
        out (io/file dir "lab")
        r (load/lab (load/read-lab-spec (doto (io/file dir "spec.edn") (spit (pr-str (spec marker))))) out {:log (fn [_])})
        [c :as cells] (:cells r)]
    (is (= 1 (count cells)))
    (is (= :ok (:status c)) (str (:reason c)))
    (testing "the wall's sweep: an uncapped max, then a run capped at half of it, with requests"
      (is (pos? (double (:max-rate c))))
      (is (= 1 (count (:steps c))) (pr-str (:steps c)))
      (let [s (first (:steps c))]
        (is (= (Math/round (* 0.5 (double (:max-rate c)))) (long (:rate s))) (pr-str s))
        (is (pos? (long (:requests s))) (pr-str s))
        (is (zero? (long (:errors s))) (pr-str s))
        ;; a 2 s run at a few requests/s: the cap holds within a couple of requests' burst, well below the max
        (is (<= (double (:achieved s)) (* 1.5 (double (:rate s)))) "the capped run stays near its cap")))
    (testing "the feed process measured: CPU per request, RSS and its GC log"
      (is (pos? (double (:cpu-ms-per-request c))))
      (is (> (double (:rss-peak-mb c)) 50.0))
      (is (pos? (long (get-in c [:gc-whole-run :count]))) "ParallelGC pauses read from the target's GC log"))
    (testing "the feed stored the workload's writes in the cell's data directory"
      (let [data (io/file out "cells" (:id c) "data")]
        (is (.isDirectory data) (str data))
        (is (some #(str/ends-with? (.getName ^File %) ".log") (file-seq data)) "RocksDB's write-ahead log")))
    (is (re-find #"<tr><td>1</td><td>feed</td><td>[^<]+</td><td>parallel: [^<]*UseParallelGC</td><td>ok</td>"
                 (slurp (io/file out "report.html")))
        "the report's wall table has the cell")
    (is (empty? (marked-pids marker)) "the lab stopped the feed")))
