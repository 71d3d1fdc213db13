(ns herald.feed.events.ids
  "Post ids that never collide between feed instances, with no id set by anyone: blocks of ids leased from the offsets of a one-partition Kafka topic."
  (:import (java.util.concurrent.locks ReentrantLock)))

(set! *warn-on-reflection* true)

;; A post id is ((block + 1) << block-bits) + n, n in [0, 2^block-bits). A block is the offset of a record this
;; instance appended (acks=all) to the one-partition ids topic: Kafka gives each appended record its own offset,
;; once, for the life of the topic (offsets only grow, also when retention deletes old records), so two
;; instances, or two runs of one instance, never hold the same block. An instance takes a new block when its
;; block is used up, and at every start (the rest of the old one is skipped). No clock, no heartbeat, no
;; node id: the only thing to keep is the ids topic (deleting it would restart the offsets at 0).

(def block-bits
  "The low bits of a post id: its number within the block (2^20 = 1,048,576 ids per block)."
  20)

(def ^:private block-size (bit-shift-left 1 (long block-bits)))

(def max-block
  "The largest block (an offset of the ids topic) that still gives positive long ids."
  (dec (bit-shift-right Long/MAX_VALUE (long block-bits))))

(defn id
  "The post id number `n` of `block`."
  ^long [^long block ^long n]
  (+ (bit-shift-left (inc block) (long block-bits)) n))

(defn block-of
  "The block a post id came from."
  ^long [^long post-id]
  (dec (bit-shift-right post-id (long block-bits))))

(deftype Allocator [lease! ^ReentrantLock lock ^longs state]) ; state: [next-id end-id (exclusive)]

(defn allocator
  "An id allocator over `lease!`, a fn of no arguments returning a new block (a non-negative long, never
  returned before to anyone: see the comment above). The first block is leased on the first id."
  [lease!]
  (Allocator. lease! (ReentrantLock.) (long-array [0 0])))

(defn next-id!
  "The next post id of `a`: unique across every allocator over the same block source. Thread-safe; leases a
  new block (one round trip to Kafka per 2^20 ids) when the current one is used up. Throws what `lease!`
  throws (nothing is consumed then)."
  ^long [^Allocator a]
  (let [^ReentrantLock lock (.lock a) ^longs st (.state a)]
    (.lock lock)
    (try
      (when (>= (aget st 0) (aget st 1))
        (let [b (long ((.lease! a)))]
          (when-not (<= 0 b (long max-block))
            (throw (ex-info (str "post id block " b " is out of range 0.." max-block)
                            {:type :herald.feed.events/id-range :block b})))
          (aset st 0 (id b 0))
          (aset st 1 (+ (id b 0) (long block-size)))))
      (let [n (aget st 0)]
        (aset st 0 (inc n))
        n)
      (finally (.unlock lock)))))
