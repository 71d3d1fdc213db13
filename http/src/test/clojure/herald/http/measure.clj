(ns herald.http.measure
  "Figures for ^:benchmark tests: CPU time per call, measured on the calling thread (never a timed assertion)."
  (:import (java.lang.management ManagementFactory)))

(set! *warn-on-reflection* true)

(defn ns-per-op
  "Best CPU ns per call of `f` over 9 rounds of `n` calls, after a warm-up: the thread's CPU time, not wall
  time, so other processes on a shared machine inflate it less."
  [n f]
  (let [mx (ManagementFactory/getThreadMXBean)]
    (dotimes [_ (* 2 n)] (f))
    (apply min (for [_ (range 9)]
                 (let [t0 (.getCurrentThreadCpuTime mx)]
                   (dotimes [_ n] (f))
                   (/ (double (- (.getCurrentThreadCpuTime mx) t0)) n))))))
