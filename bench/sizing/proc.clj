;; bench/sizing/proc.clj: CPU ticks from /proc for the sizing scripts (loaded by them with load-file; Linux only).
(require '[clojure.string :as str])
(defn proc "The text of a /proc file." [f] (String. (java.nio.file.Files/readAllBytes (java.nio.file.Path/of f (make-array String 0)))))
(defn stat-ticks "utime+stime of a /proc/.../stat text, in clock ticks." [st]
  (let [f (str/split (second (str/split st #"\) ")) #" ")] (+ (Long/parseLong (nth f 11)) (Long/parseLong (nth f 12)))))
(defn ticks "CPU ticks of process pid so far." [pid] (stat-ticks (proc (str "/proc/" pid "/stat"))))
(def me "This JVM's pid." (.pid (java.lang.ProcessHandle/current)))
(defn jit-ticks "CPU ticks of the JVM pid's JIT compiler threads (C1/C2): warm-up, not a per-post cost." [pid]
  (reduce + 0 (for [^java.io.File t (.listFiles (java.io.File. (str "/proc/" pid "/task")))
                    :let [st (try (proc (str t "/stat")) (catch Exception _ nil))]
                    :when (and st (re-find #"\((C1|C2) Compiler" st))]
                (stat-ticks st))))
