(ns herald.flow.impl.progress
  "await-caught-up on the in-process runtime: wait until the inputs have read what their sources held at the call, then pass an epoch barrier through the whole job (outputs flushed on the way)."
  (:require [herald.flow.spi :as spi]))

(set! *warn-on-reflection* true)

(defn- ended
  "nil while the job runs; else whether it completed (then everything it accepted went through)."
  [coord]
  (when (realized? (:done coord))
    (= :completed (:status @(:done coord)))))

(defn- wait-until
  "Polls `(ok?)` every millisecond until it holds (true), the job ends (its `ended` answer) or `deadline`
  passes (false)."
  [coord ok? ^long deadline]
  (loop []
    (cond (ok?) true
          (some? (ended coord)) (boolean (ended coord))
          (> (System/currentTimeMillis) deadline) false
          :else (do (Thread/sleep 1) (recur)))))

(defn await-caught-up
  "True once every segment the job's inputs had accepted before the call has gone through the job: read,
  processed, written by the outputs and flushed (`-flush!`); false on timeout or when the job ended
  otherwise than completed. See `herald.flow/await-caught-up`."
  [{:keys [coord inputs]} ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)
        marks (doall (for [[task in] inputs :when (satisfies? spi/Progress in)]
                       (let [read? (spi/-read-past in)] #(or (read?) ((:input-finished? coord) task)))))
        epoch (volatile! nil)]
    (and (wait-until coord #(every? (fn [m] (m)) marks) deadline)
         ;; an epoch requested now is barriered after every batch the inputs have read: once every thread
         ;; has acked it (flushing its outputs first), all of it is through
         (wait-until coord #(some? (vreset! epoch ((:request-epoch! coord) false))) deadline)
         (wait-until coord #(and @epoch (>= (long ((:completed-epoch coord))) (long @epoch))) deadline))))
