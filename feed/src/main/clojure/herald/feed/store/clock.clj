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

(defn edit-version
  "The version of edit `post` (epoch microseconds, ordering a post's versions in the stores that keep the newest:
  Cassandra's write timestamps, OpenSearch's external versions): its :version when the Kafka log gave it one
  (herald.feed.events), else now, above the post's :ts."
  ^long [post]
  (long (or (:version post) (max (now-micros) (inc (long (:ts post)))))))
