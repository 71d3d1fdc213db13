(ns mb
  (:require [herald.feed.store.text :as text])
  (:import (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util Random)
           (java.lang.management ManagementFactory)
           (org.apache.lucene.document Document Field FieldType NumericDocValuesField)
           (org.apache.lucene.index IndexOptions IndexWriter IndexWriterConfig TieredMergePolicy LogByteSizeMergePolicy MergePolicy Term)
           (org.apache.lucene.search SearcherManager SearcherFactory Sort SortField SortField$Type IndexSearcher TermQuery TopFieldCollectorManager Query)
           (org.apache.lucene.store NIOFSDirectory NRTCachingDirectory)))
(set! *warn-on-reflection* true)

(def onsets ["b" "c" "d" "f" "g" "h" "j" "k" "l" "m" "n" "p" "r" "s" "t" "v" "w" "z" "br" "ch" "cl" "dr" "fl" "gr" "pl" "qu" "sh" "st" "th" "tr"])
(def vowels ["a" "e" "i" "o" "u" "ai" "ea" "ie" "oo" "ou"])
(def codas ["" "" "" "n" "r" "s" "t" "l" "m" "nd" "st" "ck"])
(defn syl [^Random r] (str (onsets (.nextInt r (count onsets))) (vowels (.nextInt r (count vowels))) (codas (.nextInt r (count codas)))))
(def dict (let [r (Random. 42)] (loop [seen #{} out []] (if (= 40000 (count out)) out (let [w (apply str (repeatedly (+ 2 (.nextInt r 3)) #(syl r)))] (if (seen w) (recur seen out) (recur (conj seen w) (conj out w))))))))
(defn sentence [^Random r k] (clojure.string/join " " (repeatedly k #(nth dict (.nextInt r 40000)))))
(def posts (let [r (Random. 7)] (vec (for [i (range 50000)] (str (sentence r 5) "\n" (sentence r 150))))))

(def text-type (doto (FieldType.) (.setTokenized true) (.setIndexOptions IndexOptions/DOCS) (.setOmitNorms true) (.freeze)))
(def desc (Sort. (into-array SortField [(SortField. "id" SortField$Type/LONG true)])))
(def asc (Sort. (into-array SortField [(SortField. "id" SortField$Type/LONG false)])))
(defn cpu ^long [] (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean (ManagementFactory/getOperatingSystemMXBean)))
(defn doc [^long i ^String t]
  (doto (Document.) (.add (NumericDocValuesField. "id" (long i))) (.add (NumericDocValuesField. "from" (mod i 5000)))
    (.add (Field. "text" t ^FieldType text-type))))

(defn tmp [floor spt] (doto (TieredMergePolicy.) (.setNoCFSRatio 0.0) (.setFloorSegmentMB (double floor)) (.setSegmentsPerTier (double spt))))

(defn run [{:keys [name n sort mp refresh-every commit-every search-every ram] :or {refresh-every 4500 commit-every 25000 search-every 9 ram 64}}]
  (let [dir (Files/createTempDirectory "mb" (make-array FileAttribute 0))
        d (NRTCachingDirectory. (NIOFSDirectory. dir) 8.0 64.0)
        cfg (doto (IndexWriterConfig. text/analyzer) (.setRAMBufferSizeMB (double ram)) (.setUseCompoundFile false)
              (.setMergePolicy ^MergePolicy mp) (.setMaxFullFlushMergeWaitMillis 0))
        _ (when sort (.setIndexSort cfg (if (= sort :asc) asc desc)))
        w (IndexWriter. d cfg)
        sm (SearcherManager. w (SearcherFactory.))
        r (Random. 99)
        scpu (long-array 1)
        c0 (cpu) t0 (System/nanoTime)]
    (dotimes [i n]
      (.addDocument w (doc i (nth posts (mod i 50000))))
      (when (zero? (mod (inc i) refresh-every)) (.maybeRefreshBlocking sm))
      (when (zero? (mod (inc i) commit-every)) (.commit w))
      (when (zero? (mod (inc i) search-every))
        (let [^IndexSearcher s (.acquire sm)]
          (try (.search s ^Query (TermQuery. (Term. "text" ^String (nth dict (.nextInt r 40000))))
                        (TopFieldCollectorManager. desc (int 100) nil (int 100)))
               (finally (.release sm s))))))
    (.maybeRefreshBlocking sm)
    (let [c1 (cpu) t1 (System/nanoTime)
          segs (let [^IndexSearcher s (.acquire sm)] (try (count (.leaves (.getIndexReader s))) (finally (.release sm s))))]
      (.close sm) (.close w) (.close d)
      (doseq [^java.io.File f (reverse (file-seq (.toFile dir)))] (.delete f))
      (printf "%-28s %7.1f us cpu/doc %7.1f us wall/doc segs=%d%n" name (/ (- c1 c0) 1000.0 n) (/ (- t1 t0) 1000.0 n) segs)
      (flush))))

(def variants
  {"base" {:sort :desc :mp (tmp 16 8)}
   "asc" {:sort :asc :mp (tmp 16 8)}
   "nosort" {:sort nil :mp (tmp 16 8)}
   "floor2" {:sort :desc :mp (tmp 2 8)}
   "floor4-spt10" {:sort :desc :mp (tmp 4 10)}
   "floor16-spt16" {:sort :desc :mp (tmp 16 16)}
   "floor2-spt16" {:sort :desc :mp (tmp 2 16)}
   "asc-floor2" {:sort :asc :mp (tmp 2 8)}
   "log" {:sort :desc :mp (doto (LogByteSizeMergePolicy.) (.setNoCFSRatio 0.0))}
   "ram256" {:sort :desc :mp (tmp 16 8) :ram 256}
   "commit30k" {:sort :desc :mp (tmp 16 8) :commit-every 150000}})

(defn -main [& names]
  (let [n (Long/parseLong (or (System/getenv "N") "200000"))]
    (run (assoc (variants "base") :name "warmup" :n (Long/parseLong (or (System/getenv "W") "30000"))))
    (doseq [round (range (Long/parseLong (or (System/getenv "R") "1"))) nm names] (run (assoc (variants nm) :name (str nm " r" round) :n n)))))
