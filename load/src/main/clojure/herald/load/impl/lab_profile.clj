(ns herald.load.impl.lab-profile
  "Flame graphs of a running target: async-profiler's native library (from the tools.profiler:async-profiler
  jar on the classpath) loaded into the target JVM through the JDK's Attach API, started and stopped around
  a load step, writing HTML flame graphs."
  (:require [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (com.sun.tools.attach VirtualMachine)
           (java.io File)))

(set! *warn-on-reflection* true)

(defn library
  "Extracts async-profiler's native library for this OS and architecture into `dir` (once); returns its
  path, or throws ex-info (:herald.load/profiler-unavailable) saying why not."
  ^File [dir]
  (let [arch (case (System/getProperty "os.arch") ("amd64" "x86_64") "linux-x64" "aarch64" "linux-arm64" nil)
        res (when (and arch (= "Linux" (System/getProperty "os.name"))) (io/resource (str arch "/libasyncProfiler.so")))
        f (io/file dir "libasyncProfiler.so")]
    (when-not res
      (throw (ex-info (str "no async-profiler library for " (System/getProperty "os.name") " " (System/getProperty "os.arch")
                           " on the classpath (tools.profiler:async-profiler)")
                      {:type :herald.load/profiler-unavailable})))
    (when-not (.exists f)
      (io/make-parents f)
      (with-open [in (io/input-stream res)] (io/copy in f)))
    f))

(defn command!
  "Sends async-profiler command `cmd` (e.g. \"start,event=cpu\") to the JVM `pid`, loading `lib` into it."
  [pid ^File lib ^String cmd]
  (let [vm (VirtualMachine/attach (str pid))]
    (try (.loadAgentPath vm (.getAbsolutePath lib) cmd)
         (finally (.detach vm)))))

(defn- start-cpu!
  "Starts CPU sampling: perf_events (event=cpu); when the kernel refuses them (perf_event_paranoid, a
  container without the syscall), the itimer mode. Returns the mode used, with the reason of a fallback."
  [pid lib]
  (try (command! pid lib "start,event=cpu,interval=1ms") "cpu"
       (catch Exception e
         (command! pid lib "start,event=itimer,interval=1ms")
         (str "itimer (event=cpu refused: " (or (ex-message e) (.getName (class e))) ")"))))

(defn profile!
  "Profiles JVM `pid` while `during` (a fn of one argument, the seconds to run) runs: `events` (:cpu, :alloc)
  one after the other, each for half of `seconds`, writing `cpu.html` and `alloc.html` into `dir`.
  Returns {:cpu {:file :mode} :alloc {:file}} or, per event, {:skipped reason}; never throws for a profiler
  that cannot attach (the step still runs)."
  [pid lib-dir dir events seconds during]
  (let [lib (try (library lib-dir) (catch Exception e e))
        each (/ (double seconds) (max 1 (count events)))]
    (into {}
          (for [ev events]
            [ev (if (instance? Exception lib)
                  (do (during each) {:skipped (ex-message lib)})
                  (let [file (io/file dir (str (name ev) ".html"))
                        started (try (if (= ev :cpu) (start-cpu! pid lib) (do (command! pid lib "start,event=alloc") "alloc"))
                                     (catch Exception e {:skipped (str "async-profiler could not attach: " (or (ex-message e) (.getName (class e))))}))]
                    (during each)
                    (if (map? started)
                      started
                      (try (command! pid lib (str "stop,file=" (.getAbsolutePath file)))
                           (if (.exists file)
                             {:file (.getName file) :mode started}
                             {:skipped (str "async-profiler wrote no " (.getName file))})
                           (catch Exception e {:skipped (str "async-profiler stop failed: " (str/trim (str (ex-message e))))})))))]))))
