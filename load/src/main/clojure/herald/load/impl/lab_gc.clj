(ns herald.load.impl.lab-gc
  "The JVM's unified GC log (-Xlog:gc*:file=...:uptime,level,tags) read back: every pause (Parallel, G1,
  Shenandoah, ZGC single- and generational) with its time, and the heap before and after each collection
  for an allocation estimate."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defn log-option
  "The JVM option writing the GC log the parser reads into `file`."
  [file]
  (str "-Xlog:gc*:file=" file ":uptime,level,tags"))

(def ^:private line-re #"^\[([\d.]+)s\]\[\w+\s*\]\[([a-z,]+)\s*\]\s*(.*)$")
(def ^:private pause-re #"^GC\((\d+)\) ((?:[YO]: )?Pause .*?)(?: \d+[KMG](?:\(\d+%\))?->\d+[KMG](?:\(\d+%\))?(?:\(\d+[KMG]\))?)? ([\d.]+)ms$")
(def ^:private heap-re #"^GC\((\d+)\) .*?(\d+)([KMG])(?:\(\d+%\))?->(\d+)([KMG])")

(defn- bytes-of [n unit] (* (parse-long n) (case unit "K" 1024 "M" (* 1024 1024) "G" (* 1024 1024 1024))))

(defn parse
  "The GC log text `s` as {:pauses [{:t s :gc id :name :ms}] :heap [{:t s :gc id :before bytes :after bytes}]}:
  pauses from the [gc] and [gc,phases] lines that name a pause with its duration (one per collection and
  pause name); heap from the [gc] lines with before->after."
  [s]
  (let [lines (keep #(when-let [[_ t tags msg] (re-matches line-re %)] [(parse-double t) tags msg]) (str/split-lines (str s)))
        pauses (->> (for [[t tags msg] lines :when (#{"gc" "gc,phases"} tags)
                          :let [[_ id nm ms] (re-matches pause-re msg)] :when id]
                      {:t t :gc (parse-long id) :name (str/trim nm) :ms (parse-double ms)})
                    (reduce (fn [[seen out] p] (let [k [(:gc p) (:name p)]] (if (seen k) [seen out] [(conj seen k) (conj out p)]))) [#{} []])
                    second)
        heap (->> (for [[t tags msg] lines :when (= "gc" tags)
                        :let [[_ id b bu a au] (re-find heap-re msg)] :when id]
                    {:t t :gc (parse-long id) :before (bytes-of b bu) :after (bytes-of a au)})
                  (reduce (fn [[seen out] h] (if (seen (:gc h)) [seen out] [(conj seen (:gc h)) (conj out h)])) [#{} []])
                  second)]
    {:pauses pauses :heap heap}))

(defn- pct [sorted q]
  (when (seq sorted) (nth sorted (min (dec (count sorted)) (long (Math/floor (* q (count sorted))))))))

(defn summary
  "Pauses and allocation between uptimes `t0` and `t1` (seconds; nil for the whole log) of parsed log `g`:
  {:count :total-ms :max-ms :p50-ms :p99-ms :pauses-ms [..] :alloc-mb-per-s :collections}. The allocation
  rate is an estimate: the heap growth between consecutive collections (before of one minus after of the
  previous) over the window, so it misses what concurrent collectors free while they run."
  [g t0 t1]
  (let [in? (fn [{:keys [t]}] (and (or (nil? t0) (>= (double t) (double t0))) (or (nil? t1) (<= (double t) (double t1)))))
        ps (filter in? (:pauses g))
        ms (vec (sort (map :ms ps)))
        hs (vec (filter in? (:heap g)))
        grown (reduce + 0 (map (fn [prev cur] (max 0 (- (long (:before cur)) (long (:after prev))))) hs (rest hs)))
        span (when (> (count hs) 1) (- (double (:t (peek hs))) (double (:t (first hs)))))]
    {:count (count ms) :total-ms (reduce + 0.0 ms) :max-ms (peek ms) :p50-ms (pct ms 0.5) :p99-ms (pct ms 0.99)
     :pauses-ms ms :collections (count hs)
     :alloc-mb-per-s (when (and span (pos? span)) (/ (/ grown 1048576.0) span))}))

(defn read-log
  "Parses the GC log file `f` (an empty log when it is missing)."
  [f]
  (parse (let [f (io/file f)] (when (.exists f) (slurp f)))))
