(ns fo
  "Fan-out writes of the embedded store, post by post vs one WriteBatch per batch of 5, interleaved per chunk in one thread (thread CPU time)."
  (:require [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph])
  (:import (java.lang.management ManagementFactory ThreadMXBean)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))
(def ^ThreadMXBean tmx (ManagementFactory/getThreadMXBean))
(defn tcpu ^long [] (.getCurrentThreadCpuTime tmx))
(defn -main [& _]
  (let [dir (str (Files/createTempDirectory "fo" (make-array FileAttribute 0)))
        st (s/open-store {:type :embedded :data-dir dir})
        ids (vec (for [i (range 200)] (:id (graph/create-participant! st (str "p" i)))))
        story (apply str (repeat 150 "word "))
        n (Long/parseLong (or (System/getenv "N") "60000"))
        cpu (long-array 2)]
    (doseq [chunk (partition-all 500 (range n))]
      (let [jobs (vec (for [i chunk]
                        (let [from (ids (mod i 200)) rs (mapv #(ids (mod (+ i % 1) 200)) (range 3))]
                          {:post (feeds/publish! st {:from from :occurred "2026-11-22" :subject "s" :story story} rs) :recipients rs})))
            [a b] (split-at 250 jobs)
            one (fn [js] (doseq [{:keys [post recipients]} js] (feeds/fan-out! st post recipients)))
            bat (fn [js] (doseq [b (partition-all 5 js)] (feeds/fan-out-all! st (vec b))))
            run (fn [k f js] (let [t0 (tcpu)] (f js) (aset cpu k (+ (aget cpu k) (- (tcpu) t0)))))]
        (if (even? (first chunk)) (do (run 0 one a) (run 1 bat b)) (do (run 1 bat a) (run 0 one b)))))
    (printf "fan-out of a post to 3 recipients, thread CPU: one by one %.2f us, batches of 5 %.2f us (%d posts each)%n"
            (/ (aget cpu 0) 1000.0 (/ n 2)) (/ (aget cpu 1) 1000.0 (/ n 2)) (/ n 2))
    (s/close-store! st)))
