(ns herald.feed.jobs.mailbox
  "A bounded mailbox that producers fill without ever blocking or taking a lock, and the herald.flow input plugin that drains it (the per-minute job's request records)."
  (:require [herald.flow.spi :as spi])
  (:import (java.util.concurrent ConcurrentLinkedQueue)
           (java.util.concurrent.atomic AtomicBoolean AtomicInteger AtomicLong)))

(set! *warn-on-reflection* true)

;; Producers: one CAS on the queue's tail and one on the size. The consumer never signals anybody and
;; producers never wake the consumer: it sleeps its batch timeout when it finds the mailbox empty. That is
;; the right trade for records whose figures are published every few hundred milliseconds anyway.

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
  run took). When the mailbox is empty a poll sleeps its timeout once; after `close!` the input ends once
  drained. Its lag is the number of messages waiting.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:mailbox/mailbox` | Mailbox | required | the mailbox producers `offer!` to |"
  [task]
  (let [^Mailbox m (spi/option task :mailbox/mailbox #(instance? Mailbox %) "a herald.feed.jobs.mailbox/mailbox")]
    (reify
      spi/Lag
      (-lag [_] (queued m))
      spi/Input
      (-poll! [_ max-n timeout-ms]
        (let [closed? (.get ^AtomicBoolean (.closed m))
              b (drain! m max-n)]
          (cond (seq b) b
                closed? (when (pos? (queued m)) [])
                (pos? (long timeout-ms)) (do (Thread/sleep (long timeout-ms)) (drain! m max-n))
                :else b)))
      (-position [_] nil)
      (-seek! [_ _])
      (-close-input! [_]))))
