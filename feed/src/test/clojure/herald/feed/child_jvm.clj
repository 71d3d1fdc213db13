(ns herald.feed.child-jvm
  "The classpath of the feed processes that tests start in child JVMs (crash tests, cluster instances, the new
  user's jar-less start): this JVM's classpath with, in front, the herald namespaces of the main sources compiled
  ahead of time once per test run (in its own JVM, so that this one's loaded namespaces are not reloaded), as
  the standalone jar carries them (build/aot_jar.clj). A child then starts without compiling ~110 namespaces:
  ~11 s of CPU less per start on this 2-core machine, and the suite starts ~20 of them. When the compilation
  fails the children load from source as before (the reason is printed once); HERALD_TEST_CHILD_AOT=0 skips it."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed.test-util :as u])
  (:import (java.io File)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- child-namespace?
  "True for a namespace a feed child JVM may load: not herald-load's (`herald.load`, `herald.load.*`), a test
  dependency of the feed that no child runs (its ~36 namespaces were a quarter of the compilation)."
  [sym]
  (not (re-matches #"herald\.load(\..*)?" (str sym))))

(defn- main-source-namespaces
  "The herald.* namespaces of the classpath's main output directories (`.../target/classes`) that a child may load
  (`child-namespace?`), as symbols."
  [entries]
  (sort (for [^String e entries
              :let [root (io/file e)]
              :when (and (.isDirectory root) (str/ends-with? (.getPath root) (str "target" File/separator "classes")))
              ^File f (file-seq (io/file root "herald"))
              :let [rel (str (.relativize (.toPath root) (.toPath f)))]
              :when (str/ends-with? rel ".clj")
              :let [n (symbol (-> (subs rel 0 (- (count rel) 4)) (.replace File/separatorChar \.) (.replace \_ \-)))]
              :when (child-namespace? n)]
          n)))

(def ^:private compile-form
  "Run by the compiling JVM: compiles each namespace of herald.aot.nss (comma-separated) not loaded yet into
  herald.aot.dir."
  (str '(binding [*compile-path* (System/getProperty "herald.aot.dir") *compile-files* true]
          (doseq [n (map symbol (.split (System/getProperty "herald.aot.nss") ",")) :when (not (find-ns n))] (compile n))
          (shutdown-agents)
          (System/exit 0))))

(defn- compile! []
  (let [t0 (System/nanoTime)
        cp (System/getProperty "java.class.path")
        out (io/file "target" "child-aot")
        nss (main-source-namespaces (str/split cp (re-pattern File/pathSeparator)))
        log (io/file "target" "child-aot.log")]
    (u/delete-tree! out)
    (.mkdirs out)
    (let [^java.util.List cmd [(str (io/file (System/getProperty "java.home") "bin" "java")) "-Xmx512m"
                                     "-XX:TieredStopAtLevel=1" "-XX:+UseSerialGC" "--enable-native-access=ALL-UNNAMED"
                                     (str "-Dherald.aot.dir=" (.getAbsolutePath out))
                                     (str "-Dherald.aot.nss=" (str/join "," nss)) "-cp" cp
                                     "clojure.main" "-e" compile-form]
          p (-> (ProcessBuilder. cmd) (.redirectErrorStream true) (.redirectOutput (io/file log)) (.start))]
      (if (and (.waitFor p 600 TimeUnit/SECONDS) (zero? (.exitValue p)) (seq nss))
        (do (println (format "herald.feed.child-jvm: %d namespaces compiled for child JVMs in %.1f s"
                             (count nss) (/ (- (System/nanoTime) t0) 1e9)))
            (str (.getAbsolutePath out) File/pathSeparator cp))
        (do (.destroyForcibly p)
            (println "herald.feed.child-jvm: compiling for child JVMs failed (they load from source):"
                     (str/join " | " (take-last 5 (str/split-lines (slurp log)))))
            cp)))))

(def ^:private compiled
  (delay (if (= "0" (System/getenv "HERALD_TEST_CHILD_AOT"))  ; children from source, as before (A/B, debugging)
           (System/getProperty "java.class.path")
           (compile!))))

(defn ^:herald.test/start-early start-async!
  "Starts the compilation in the background (build/test_runner.clj calls it once the test namespaces are
  loaded). Returns nil."
  []
  (future @compiled)
  nil)

(defn classpath
  "The classpath for a feed child JVM: the compiled namespaces first (waits for them on first use), then this
  JVM's classpath."
  ^String []
  @compiled)
