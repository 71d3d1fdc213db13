(ns herald.feed.store.clock
  "Server timestamps for posts: epoch microseconds, strictly increasing per store."
  (:import (java.time Instant)
           (java.util.concurrent.atomic AtomicLong)
           (java.util.function LongUnaryOperator)))

(set! *warn-on-reflection* true)

(defn now-micros
  "The wall clock in epoch microseconds."
  ^long []
  (let [i (Instant/now)]
    (+ (* (.getEpochSecond i) 1000000) (quot (.getNano i) 1000))))

(defn next-after
  "The timestamp for a new post given the last one issued: now, or last + 1 if the clock lags."
  ^long [^long last]
  (max (now-micros) (inc last)))

(defn tick!
  "Issues the next timestamp from last (an AtomicLong holding the last one issued); thread-safe."
  ^long [^AtomicLong last]
  (.updateAndGet last (reify LongUnaryOperator (applyAsLong [_ x] (next-after x)))))
