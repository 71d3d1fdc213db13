(ns herald.load.impl.meta
  "Run metadata stamped on every result: commit, JVM, GC, cores, transport, time, options."
  (:require [clojure.java.shell :as sh]
            [clojure.string :as str])
  (:import (herald.load.client Transport)
           (java.lang.management GarbageCollectorMXBean ManagementFactory)
           (java.time Instant)))

(set! *warn-on-reflection* true)

(defn commit
  "The git commit of the working directory (with -dirty when it has changes), or HERALD_COMMIT, or nil."
  []
  (or (System/getenv "HERALD_COMMIT")
      (try
        (let [{:keys [exit out]} (sh/sh "git" "rev-parse" "--short=12" "HEAD")]
          (when (zero? exit)
            (let [dirty (:out (sh/sh "git" "status" "--porcelain" "--untracked-files=no"))]
              (str (str/trim out) (when-not (str/blank? dirty) "-dirty")))))
        (catch Exception _ nil))))

(defn gc-names
  "The names of the running JVM's garbage collectors."
  []
  (mapv #(.getName ^GarbageCollectorMXBean %) (ManagementFactory/getGarbageCollectorMXBeans)))

(defn run-meta
  "Metadata for a run with options `opts` (functions and other non-data values are dropped)."
  [opts]
  {:commit (commit)
   :generator "herald-load"
   :jvm (str (System/getProperty "java.vm.name") " " (System/getProperty "java.runtime.version"))
   :jvm-args (vec (.getInputArguments (ManagementFactory/getRuntimeMXBean)))
   :gc (gc-names)
   :cores (.availableProcessors (Runtime/getRuntime))
   :os (str (System/getProperty "os.name") " " (System/getProperty "os.version"))
   :transport (if (Transport/epoll) :epoll :nio)
   :started-at (str (Instant/now))
   :options (into (sorted-map) (remove (fn [[_ v]] (or (fn? v) (instance? java.io.Writer v)))) opts)})
