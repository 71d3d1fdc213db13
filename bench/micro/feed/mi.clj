(ns mi
  "Interleaved A/B/C: several IndexWriters fed the same posts chunk by chunk in one thread (SerialMergeScheduler:
  merges run in this thread), thread CPU time charged to each variant per chunk."
  (:require [herald.feed.store.text :as text]
            [mb])
  (:import (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.util Random)
           (java.lang.management ManagementFactory ThreadMXBean)
           (org.apache.lucene.document Document Field FieldType NumericDocValuesField)
           (org.apache.lucene.index IndexWriter IndexWriterConfig MergePolicy SerialMergeScheduler Term TieredMergePolicy)
           (org.apache.lucene.search SearcherManager SearcherFactory Sort SortField SortField$Type IndexSearcher TermQuery TopFieldCollectorManager Query)
           (org.apache.lucene.store NIOFSDirectory NRTCachingDirectory)))
(set! *warn-on-reflection* true)

(def ^ThreadMXBean tmx (ManagementFactory/getThreadMXBean))
(defn tcpu ^long [] (.getCurrentThreadCpuTime tmx))

(defn open-variant [{:keys [sort mp aligned]}]
  (let [dir (Files/createTempDirectory "mi" (make-array FileAttribute 0))
        d (NRTCachingDirectory. (NIOFSDirectory. dir) 8.0 64.0)
        cfg (doto (IndexWriterConfig. text/analyzer) (.setRAMBufferSizeMB 64.0) (.setUseCompoundFile false)
              (.setMergePolicy ^MergePolicy mp) (.setMaxFullFlushMergeWaitMillis 0)
              (.setMergeScheduler (SerialMergeScheduler.))
              (.setIndexSort (if (= sort :asc) mb/asc mb/desc)))
        w (IndexWriter. d cfg)]
    {:dir dir :d d :w w :sm (SearcherManager. w (SearcherFactory.)) :sort sort :cpu (long-array 1) :search-cpu (long-array 1) :aligned aligned :last-commit (long-array 1)}))

(defn step! [{:keys [^IndexWriter w ^SearcherManager sm sort ^longs cpu ^longs search-cpu aligned ^longs last-commit]} from to words]
  (let [t0 (tcpu)]
    (doseq [i (range from to)]
      (.addDocument w (mb/doc i (nth mb/posts (mod i 50000))))
      (if aligned
        (when (zero? (mod (inc i) 4500))
          (.maybeRefreshBlocking sm)
          (when (>= (- (inc i) (aget last-commit 0)) 25000) (aset last-commit 0 (long (inc i))) (.commit w)))
        (do (when (zero? (mod (inc i) 4500)) (.maybeRefreshBlocking sm))
            (when (zero? (mod (inc i) 25000)) (.commit w)))))
    (let [t1 (tcpu)]
      (doseq [^String word words]
        (let [^IndexSearcher s (.acquire sm)
              q (TermQuery. (Term. "text" word))]
          (try (if (= sort :asc)
                 ((requiring-resolve 'herald.feed.store.embedded.newest/newest-senders) s q 100)
                 (.search s ^Query q (TopFieldCollectorManager. ^Sort mb/desc (int 100) nil (int 100))))
               (finally (.release sm s)))))
      (let [t2 (tcpu)]
        (aset cpu 0 (+ (aget cpu 0) (- t1 t0)))
        (aset search-cpu 0 (+ (aget search-cpu 0) (- t2 t1)))))))

(defn -main [& names]
  (let [n (Long/parseLong (or (System/getenv "N") "300000"))
        chunk 500
        vs (mapv (fn [nm] (assoc (open-variant (if (= nm "aligned") (assoc (mb/variants "base") :aligned true) (mb/variants nm))) :name nm)) names)
        r (Random. 5)]
    (loop [i 0 k 0]
      (when (< i n)
        (let [to (min n (+ i chunk))
              words (vec (repeatedly (quot chunk 9) #(nth mb/dict (.nextInt r 40000))))
              order (if (even? k) vs (reverse vs))]
          (doseq [v order] (step! v i to words))
          (when (or (zero? (mod to 50000)) (= to n))
            (println "at" to (clojure.string/join " " (for [v vs] (format "%s index %.1f us/doc search %.1f us/doc" (:name v) (/ (aget ^longs (:cpu v) 0) 1000.0 to) (/ (aget ^longs (:search-cpu v) 0) 1000.0 to)))))
            (flush))
          (recur to (inc k)))))
    (doseq [{:keys [^IndexWriter w ^SearcherManager sm ^java.io.Closeable d name] :as v} vs]
      (let [segs (let [^IndexSearcher s (.acquire sm)] (try (count (.leaves (.getIndexReader s))) (finally (.release sm s))))]
        (println "final" name "segs" segs))
      (.close sm) (.close w) (.close d))))
