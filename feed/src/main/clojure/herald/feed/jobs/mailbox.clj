(ns herald.feed.jobs.mailbox
  "A bounded mailbox that producers fill without taking a lock or waking anybody, and the herald.flow input plugin that drains it (the feed jobs' inputs: posts and request records)."
  (:require [herald.flow.spi :as spi])
  (:import (java.util.concurrent ConcurrentLinkedQueue)
           (java.util.concurrent.locks LockSupport)
           (java.util.concurrent.atomic AtomicBoolean AtomicInteger AtomicLong)))

(set! *warn-on-reflection* true)

;; Producers: one CAS on the queue's tail and one on the size. The consumer never signals anybody and
;; producers never wake the consumer: a blocking queue's signal costs a futex wake-up (microseconds on a
;; busy VM) on the request thread whenever the consumer was idle. The consumer instead sleeps when it finds
;; the mailbox empty: 1 ms after a busy poll, doubling while it stays empty, up to its poll timeout.

(deftype Mailbox [^ConcurrentLinkedQueue queue ^AtomicInteger size ^long capacity
                  ^AtomicLong accepted ^AtomicLong dropped ^AtomicBoolean closed])

(defn mailbox
  "A mailbox holding at most `capacity` messages."
  [capacity]
  (Mailbox. (ConcurrentLinkedQueue.) (AtomicInteger.) (long capacity) (AtomicLong.) (AtomicLong.) (AtomicBoolean.)))

(defn offer!
  "Adds `msg` unless the mailbox is full or closed; true when added. Never blocks; a refused message is
  counted in `dropped`."
  [^Mailbox m msg]
  (if (or (> (.incrementAndGet ^AtomicInteger (.size m)) (.capacity m)) (.get ^AtomicBoolean (.closed m)))
    (do (.decrementAndGet ^AtomicInteger (.size m))
        (.incrementAndGet ^AtomicLong (.dropped m))
        false)
    (do (.offer ^ConcurrentLinkedQueue (.queue m) msg)
        (.incrementAndGet ^AtomicLong (.accepted m))
        true)))

(defn put!
  "Adds `msg`, waiting while the mailbox is full (backpressure: parks 0.2 ms at a time) as long as
  `(alive?)` holds (asked every 100 ms of waiting); true when added, false when closed or no longer alive."
  [^Mailbox m msg alive?]
  (let [^AtomicInteger size (.size m)]
    (loop [n 1]
      (cond (.get ^AtomicBoolean (.closed m)) false
            (<= (.incrementAndGet size) (.capacity m))
            (if (.get ^AtomicBoolean (.closed m))
              (do (.decrementAndGet size) false)
              (do (.offer ^ConcurrentLinkedQueue (.queue m) msg)
                  (.incrementAndGet ^AtomicLong (.accepted m))
                  true))
            :else (do (.decrementAndGet size)
                      (if (and (zero? (mod n 500)) (not (alive?)))
                        false
                        (do (LockSupport/parkNanos 200000) (recur (inc n)))))))))

(defn accepted "Messages added so far." ^long [^Mailbox m] (.get ^AtomicLong (.accepted m)))
(defn dropped "Messages refused so far (full or closed)." ^long [^Mailbox m] (.get ^AtomicLong (.dropped m)))
(defn queued "Messages waiting." ^long [^Mailbox m] (.get ^AtomicInteger (.size m)))

(defn close!
  "Refuses further messages; the input ends once it has drained the ones already in."
  [^Mailbox m]
  (.set ^AtomicBoolean (.closed m) true))

(defn- drain! [^Mailbox m ^long max-n]
  (let [^ConcurrentLinkedQueue q (.queue m)]
    (loop [acc (transient []) n 0]
      (if (< n max-n)
        (if-some [x (.poll q)]
          (recur (conj! acc x) (inc n))
          (do (.addAndGet ^AtomicInteger (.size m) (- n)) (persistent! acc)))
        (do (.addAndGet ^AtomicInteger (.size m) (- n)) (persistent! acc))))))

(defn mailbox-input
  "A herald.flow input draining a `mailbox` (not replayable: a resumed job does not see what an earlier
  run took). When the mailbox is empty a poll sleeps: `:mailbox/min-wait-ms` after a poll that found
  messages, twice as long after each empty one, at most its timeout (the task's `:task/batch-timeout-ms`).
  After `close!` the input ends once drained. Its lag is the number of messages waiting.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:mailbox/mailbox` | Mailbox | required | the mailbox producers `offer!` or `put!` to |
  | `:mailbox/min-wait-ms` | pos-int | the poll timeout | the first sleep on an empty mailbox after a busy poll |"
  [task]
  (let [^Mailbox m (spi/option task :mailbox/mailbox #(instance? Mailbox %) "a herald.feed.jobs.mailbox/mailbox")
        min-wait (spi/option task :mailbox/min-wait-ms #(or (nil? %) (pos-int? %)) "a positive integer (milliseconds)")
        wait (volatile! (long (or min-wait Long/MAX_VALUE)))]
    (reify
      spi/Lag
      (-lag [_] (queued m))
      spi/Input
      (-poll! [_ max-n timeout-ms]
        (let [closed? (.get ^AtomicBoolean (.closed m))
              b (drain! m max-n)]
          (cond (seq b) (do (vreset! wait (long (or min-wait timeout-ms))) b)
                closed? (when (pos? (queued m)) [])
                (pos? (long timeout-ms)) (let [w (min (long @wait) (long timeout-ms))]
                                           (Thread/sleep w)
                                           (vreset! wait (min (* 2 w) (long timeout-ms)))
                                           (drain! m max-n))
                :else b)))
      (-position [_] nil)
      (-seek! [_ _])
      (-close-input! [_]))))
