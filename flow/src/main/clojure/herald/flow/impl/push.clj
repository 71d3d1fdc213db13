(ns herald.flow.impl.push
  "The push input: a bounded buffer callers push segments into (blocking while it is full: backpressure) and a job's input drains; producers never take a lock nor wake the input."
  (:require [herald.flow.spi :as spi])
  (:import (java.util.concurrent ConcurrentLinkedQueue)
           (java.util.concurrent.atomic AtomicBoolean AtomicInteger AtomicLong)
           (java.util.concurrent.locks LockSupport)))

(set! *warn-on-reflection* true)

;; Producers: one CAS on the queue's tail and one on the size; they never signal the input (a blocking
;; queue's signal costs a futex wake-up on the producer whenever the input was idle). The input instead
;; sleeps when it finds the buffer empty: min-wait after a poll that found segments, doubling while it
;; stays empty, at most its poll timeout. Progress markers (await-caught-up) go through the same queue, so
;; "everything accepted before the marker has been read" follows from the queue's order.

(deftype Marker [^AtomicBoolean seen])

(deftype PushInput [^ConcurrentLinkedQueue queue ^AtomicInteger size ^long capacity
                    ^AtomicLong accepted ^AtomicLong dropped ^AtomicBoolean closed ^long min-wait
                    ^longs wait]
  spi/Lag
  (-lag [_] (.get size))
  spi/Progress
  (-read-past [_]
    (let [m (Marker. (AtomicBoolean.))]
      (.offer queue m)
      (fn [] (.get ^AtomicBoolean (.seen m)))))
  spi/Input
  (-poll! [this max-n timeout-ms]
    (let [closed? (.get closed)
          drain! (fn [] (let [acc (java.util.ArrayList.)]
                          (loop [n 0]
                            (if (< n (long max-n))
                              (let [x (.poll queue)]
                                (cond (nil? x) nil
                                      (instance? Marker x) (do (.set ^AtomicBoolean (.seen ^Marker x) true) (recur n))
                                      :else (do (.add acc x) (recur (inc n)))))))
                          (.addAndGet size (- (.size acc)))
                          (vec acc)))
          b (drain!)]
      (cond (seq b) (do (aset wait 0 (min min-wait (long timeout-ms))) b)
            closed? (when (pos? (.get size)) [])
            (pos? (long timeout-ms)) (let [w (max 1 (min (aget wait 0) (long timeout-ms)))]
                                       (Thread/sleep w)
                                       (aset wait 0 (min (* 2 w) (long timeout-ms)))
                                       (drain!))
            :else b)))
  (-position [_] nil)
  (-seek! [_ _])
  (-close-input! [_] (.set closed true)))

(defn push-input
  "A new push input holding at most `capacity` segments; an empty poll first sleeps `min-wait-ms`."
  [capacity min-wait-ms]
  (PushInput. (ConcurrentLinkedQueue.) (AtomicInteger.) (long capacity) (AtomicLong.) (AtomicLong.)
              (AtomicBoolean.) (long min-wait-ms) (long-array [min-wait-ms])))

(defn push-input? "True for a push input." [x] (instance? PushInput x))

(defn- try-add!
  "Adds `seg` when there is room: :added, :full or :closed."
  [^PushInput in seg]
  (let [^AtomicInteger size (.size in)]
    (cond (.get ^AtomicBoolean (.closed in)) :closed
          (<= (.incrementAndGet size) (.capacity in))
          (if (.get ^AtomicBoolean (.closed in))
            (do (.decrementAndGet size) :closed)
            (do (.offer ^ConcurrentLinkedQueue (.queue in) seg)
                (.incrementAndGet ^AtomicLong (.accepted in))
                :added))
          :else (do (.decrementAndGet size) :full))))

(defn push!
  "Adds `seg`, waiting while the buffer is full (parks 0.2 ms at a time) at most `timeout-ms` and as long as
  `(alive?)` holds (asked every 100 ms of waiting). Returns :added, :full (timed out; counted as dropped),
  :closed or :dead."
  [^PushInput in seg ^long timeout-ms alive?]
  (let [deadline (if (< timeout-ms 1000000000000) (+ (System/nanoTime) (* 1000000 timeout-ms)) Long/MAX_VALUE)]
    (loop [n 1]
      (let [r (try-add! in seg)]
        (cond (not= :full r) r
              (or (<= timeout-ms 0) (>= (System/nanoTime) deadline))
              (do (.incrementAndGet ^AtomicLong (.dropped in)) :full)
              (and (zero? (mod n 500)) (not (alive?))) :dead
              :else (do (LockSupport/parkNanos 200000) (recur (inc n))))))))

(defn close!
  "Refuses further segments; the input ends once it has handed on the ones already in."
  [^PushInput in]
  (.set ^AtomicBoolean (.closed in) true))

(defn stats
  "`{:accepted :dropped :queued :capacity}` of push input `in`."
  [^PushInput in]
  {:accepted (.get ^AtomicLong (.accepted in)) :dropped (.get ^AtomicLong (.dropped in))
   :queued (.get ^AtomicInteger (.size in)) :capacity (.capacity in)})
