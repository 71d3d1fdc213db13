(ns herald.load.impl.lab-proc
  "The lab's targets as processes: start one with its JDK and JVM options injected, wait until it answers,
  read its process tree's CPU time and RSS from /proc, and stop the whole tree."
  (:require [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io File)
           (java.lang ProcessHandle)
           (java.net HttpURLConnection ServerSocket URL)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn free-port
  "A TCP port free on this machine now."
  []
  (with-open [s (ServerSocket. 0)] (.getLocalPort s)))

(defn substitute
  "`s` with each {name} of `vars` (a map of name strings to strings) replaced; other braces stay."
  [s vars]
  (str/replace (str s) #"\{([a-z-]+)\}" (fn [[all k]] (get vars k all))))

(defn shell-words
  "JVM options as one shell-safe string (each option single-quoted when it needs it)."
  [opts]
  (str/join " " (for [^String o opts] (if (re-matches #"[A-Za-z0-9_:=.,+/@%-]+" o) o (str "'" (str/replace o "'" "'\\''") "'")))))

(defn- builder ^ProcessBuilder [args] (ProcessBuilder. ^java.util.List (vec args)))

(defn start!
  "Starts `cmd` (bash -c) in `dir` with `env` added, stdout and stderr into `log`; returns the Process."
  ^Process [cmd dir env ^File log]
  (io/make-parents log)
  (let [pb (doto (builder ["bash" "-c" cmd])
             (.redirectErrorStream true)
             (.redirectOutput log)
             (.redirectInput (java.lang.ProcessBuilder$Redirect/from (io/file "/dev/null"))))]
    (when dir (.directory pb (io/file dir)))
    (.putAll (.environment pb) ^java.util.Map env)
    (.start pb)))

(defn tree
  "The live process handles of `p`'s tree: itself and its descendants."
  [^Process p]
  (let [h (.toHandle p)]
    (filter #(.isAlive ^ProcessHandle %) (cons h (iterator-seq (.iterator (.descendants h)))))))

(defn read-proc
  "The text of a /proc file (slurp fails on some of them: their size is 0 and available() is refused), or
  \"\" when it cannot be read (the process is gone)."
  [path]
  (try (String. (java.nio.file.Files/readAllBytes (.toPath (io/file (str path)))) "ISO-8859-1")
       (catch Exception _ "")))

(defn- stat-fields [pid]
  (try (let [s (read-proc (str "/proc/" pid "/stat"))]
         (str/split (str/trim (subs s (inc (str/last-index-of s ")")))) #"\s+"))
       (catch Exception _ nil)))

(def clock-ticks
  "Kernel clock ticks per second (USER_HZ) of /proc/<pid>/stat's CPU times."
  100.0)

(defn cpu-seconds
  "CPU time (user + system, children reaped included) of the live processes `handles`, in seconds, from
  /proc/<pid>/stat."
  [handles]
  (/ (reduce + 0 (for [^ProcessHandle h handles :let [f (stat-fields (.pid h))] :when f]
                   ;; fields after the comm: state is 0, utime 11, stime 12, cutime 13, cstime 14
                   (reduce + (map #(parse-long (nth f %)) [11 12 13 14]))))
     clock-ticks))

(defn rss-bytes
  "Resident memory of the live processes `handles` together, in bytes, from /proc/<pid>/status (VmRSS)."
  [handles]
  (* 1024 (reduce + 0 (for [^ProcessHandle h handles
                            :let [s (read-proc (str "/proc/" (.pid h) "/status"))
                                  kb (second (re-find #"VmRSS:\s+(\d+)" s))]
                            :when kb]
                        (parse-long kb)))))

(defn java-pid
  "The pid of the JVM in `p`'s tree (the first process whose executable is a bin/java), or nil."
  [^Process p]
  (some (fn [^ProcessHandle h]
          (let [exe (try (str (.toRealPath (.toPath (io/file (str "/proc/" (.pid h) "/exe"))) (make-array java.nio.file.LinkOption 0)))
                         (catch Exception _ ""))]
            (when (str/ends-with? exe "/bin/java") (.pid h))))
        (tree p)))

(defn stop!
  "Stops `p`'s whole tree: SIGTERM to every process, up to `grace-s` seconds, then SIGKILL to what is left.
  Returns true when nothing of the tree is left alive."
  [^Process p grace-s]
  (let [hs (vec (tree p))]
    (doseq [^ProcessHandle h (reverse hs)] (.destroy h))
    (let [deadline (+ (System/nanoTime) (long (* 1e9 (double grace-s))))]
      (while (and (some #(.isAlive ^ProcessHandle %) hs) (< (System/nanoTime) deadline)) (Thread/sleep 50)))
    (doseq [^ProcessHandle h hs :when (.isAlive h)] (.destroyForcibly h))
    (.waitFor p 5 TimeUnit/SECONDS)
    (not-any? #(.isAlive ^ProcessHandle %) hs)))

(defn kill-leftover!
  "Kills process `pid` and its descendants that carry `marker` (e.g. HERALD_LAB_CELL=<id>) in their
  environment: a target an earlier lab, killed with SIGKILL, left running. Returns the pids killed."
  [pid ^String marker]
  (let [h (.orElse (ProcessHandle/of (long pid)) nil)
        marked? (fn [^ProcessHandle x]
                  (str/includes? (read-proc (str "/proc/" (.pid x) "/environ")) marker))]
    (if (and h (.isAlive ^ProcessHandle h))
      (vec (for [^ProcessHandle x (cons h (iterator-seq (.iterator (.descendants ^ProcessHandle h))))
                 :when (marked? x)]
             (do (.destroyForcibly x) (.pid x))))
      [])))

(defn tail
  "The last `n` lines of file `f` (\"\" when missing)."
  [f n]
  (let [f (io/file f)]
    (if (.exists f) (str/join "\n" (take-last n (str/split-lines (slurp f)))) "")))

(defn- answers? [^String url]
  (try (let [c ^HttpURLConnection (.openConnection (URL. url))]
         (.setConnectTimeout c 1000) (.setReadTimeout c 2000)
         (let [code (.getResponseCode c)] (.disconnect c) (pos? code)))
       (catch Exception _ false)))

(defn await-ready!
  "Waits until `url` answers any HTTP response, up to `timeout-s`; throws ex-info (:herald.load/target-failed)
  when the process exits first or the time runs out (with the end of its `log`)."
  [^Process p url timeout-s log]
  (let [deadline (+ (System/nanoTime) (long (* 1e9 (double timeout-s))))]
    (loop []
      (cond
        (answers? url) true
        (not (.isAlive p)) (throw (ex-info (str "the target exited (status " (.exitValue p) ") before " url " answered: " (tail log 5))
                                           {:type :herald.load/target-failed}))
        (> (System/nanoTime) deadline) (throw (ex-info (str url " did not answer within " timeout-s " s: " (tail log 5))
                                                       {:type :herald.load/target-failed}))
        :else (do (Thread/sleep 200) (recur))))))

(defn jvm-accepts?
  "nil when the JDK at `home` starts with `opts` (java OPTS -version), else the reason (its first error
  line), e.g. an unknown collector or option."
  [home opts]
  (let [pb (doto (builder (concat [(str home "/bin/java")] opts ["-version"]))
             (.redirectErrorStream true))
        p (.start pb)
        out (slurp (.getInputStream p))]
    (when-not (.waitFor p 60 TimeUnit/SECONDS) (.destroyForcibly p))
    (when-not (zero? (.exitValue p))
      (or (first (remove #(str/starts-with? % "Error: Could not create") (str/split-lines out))) "java -version failed"))))

(defn java-version-text
  "The first line of `java -version` of the JDK at `home` plus its VM line."
  [home]
  (let [p (.start (doto (builder [(str home "/bin/java") "-version"]) (.redirectErrorStream true)))
        out (slurp (.getInputStream p))]
    (.waitFor p)
    (str/join "; " (take 3 (str/split-lines out)))))
