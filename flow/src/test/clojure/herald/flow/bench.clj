(ns herald.flow.bench
  "The Onyx 0.6.0 benchmark job on herald.flow's in-process runtime, beside a hand-written fused loop (the ceiling)."
  (:require [herald.flow :as flow]
            [herald.flow.spi :as spi])
  (:import (java.util.concurrent ThreadLocalRandom)))

(set! *warn-on-reflection* true)

(defn- segment [] {:n (.nextInt (ThreadLocalRandom/current) 10000) :data (byte-array 100)})

(defn inc-n
  "The benchmark's task fn: increments :n."
  [seg]
  (assoc seg :n (inc (long (:n seg)))))

(defn generator-input
  "An input producing `:bench/count` generated segments (a random int and a 100-byte payload)."
  [task]
  (let [left (volatile! (long (:bench/count task)))]
    (reify spi/Input
      (-poll! [_ max-n _]
        (let [n (min (long max-n) (long @left))]
          (when (pos? n)
            (vswap! left - n)
            (loop [i 0 b (transient [])] (if (< i n) (recur (inc i) (conj! b (segment))) (persistent! b))))))
      (-position [_] nil)
      (-seek! [_ _])
      (-close-input! [_]))))

(defn job
  "input -> inc1 -> inc2 -> inc3 -> inc4 -> output (discard)."
  [batch-size n]
  {:job/name :onyx-bench
   :workflow [[:in :inc1] [:inc1 :inc2] [:inc2 :inc3] [:inc3 :inc4] [:inc4 :out]]
   :catalog (into [{:task/name :in :task/type :input :task/plugin :herald.flow.bench/generator-input
                    :task/batch-size batch-size :bench/count n}
                   {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/discard-output}]
                  (for [i (range 1 5)] {:task/name (keyword (str "inc" i)) :task/type :function :task/fn :herald.flow.bench/inc-n}))})

(defn- herald-sps [batch-size n opts]
  (let [t0 (System/nanoTime)
        h (flow/submit-job (job batch-size n) opts)
        st (flow/await-job h 600000)]
    (when-not (= :completed (:status st)) (throw (ex-info "bench job did not complete" st)))
    (/ n (/ (- (System/nanoTime) t0) 1e9))))

(def ^:private sink (volatile! 0))

(defn- fused-sps [n]
  (let [t0 (System/nanoTime)]
    (loop [i 0 acc 0]
      (if (< i (long n))
        (let [s (-> (segment) inc-n inc-n inc-n inc-n)] (recur (inc i) (+ acc (long (:n s)))))
        (vreset! sink acc)))
    (/ n (/ (- (System/nanoTime) t0) 1e9))))

(defn- median [xs] (nth (sort xs) (quot (count xs) 2)))

(defn -main
  "Runs each batch size `rounds` times after a warm-up, the runtime and the fused loop interleaved within each
  round (so load on the shared machine hits both alike), and prints one line per batch size: the medians of
  each figure and the median of the per-round ratios."
  [& [n-str rounds-str fuse-str]]
  (let [n (parse-long (or n-str "3000000")) rounds (parse-long (or rounds-str "5"))
        opts {:fuse? (not= "false" fuse-str)}]
    (dotimes [_ 2] (herald-sps 64 n opts) (herald-sps 1 (quot n 4) opts) (fused-sps n))
    (doseq [b [1 64]]
      (let [nb (if (= b 1) (quot n 2) n)
            rs (vec (repeatedly rounds (fn [] (let [h (herald-sps b nb opts) f (fused-sps nb)] [h f (/ h f)]))))]
        (println (format "flow batch=%d herald_sps=%d fused_sps=%d ratio=%.3f"
                         b (long (median (map first rs))) (long (median (map second rs))) (double (median (map peek rs)))))))
    (shutdown-agents)))
