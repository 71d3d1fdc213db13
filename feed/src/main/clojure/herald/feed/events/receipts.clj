(ns herald.feed.events.receipts
  "Receipts of author copies on the Kafka log: once the request path has written a post's author copy (after its
  append was acknowledged), the post's id rides on the next record this instance appends to the same partition,
  as `:author-copies [ids]`, so that the fan-out job, which reads both, need not write that copy a second time
  (issue 10: two of a post's ~7.5 Cassandra rows). A receipt is only ever made after the write returned, so a job
  that skips a copy on its strength never loses one; a receipt that never arrives (the instance crashed between
  the acknowledgement and the write, the write failed, the carrying append failed, no later record in the
  partition) only means that the job writes the copy itself, as before (herald.feed.jobs.derived/feeds-output)."
  (:require [herald.feed.events.kafka :as kafka])
  (:import (java.util.concurrent.atomic AtomicReferenceArray)))

(set! *warn-on-reflection* true)

(def max-per-partition
  "Most receipts waiting for a carrier in one partition: past it a receipt is dropped (the job then writes that
  copy), so a partition that sees no later record holds a bounded list."
  64)

(defn receipts
  "The receipts of an instance for a posts topic of `n` partitions: per partition, the ids waiting for a carrier."
  [^long n]
  {:n n :waiting (AtomicReferenceArray. (int n))})

(defn note!
  "Records that the author copy of post `id`, whose record was appended under `key`, is written: the next record
  appended under a key of the same partition carries it (`attach`). Dropped past `max-per-partition`."
  [{:keys [n ^AtomicReferenceArray waiting]} key id]
  (let [p (int (kafka/partition-of key n))]
    (loop []
      (let [v (.get waiting p)]
        (when (< (count v) (long max-per-partition))
          (when-not (.compareAndSet waiting p v (conj (or v []) id))
            (recur)))))))

(defn attach
  "`record` (a map to append under `key`) with the receipts waiting in its partition as `:author-copies`, which
  are taken (each goes on one record only; should its append fail, they are lost: the job writes those copies)."
  [{:keys [n ^AtomicReferenceArray waiting]} record key]
  (let [ids (.getAndSet waiting (int (kafka/partition-of key n)) nil)]
    (cond-> record (seq ids) (assoc :author-copies ids))))

(defn written
  "The ids whose author copies the records `segments` say are written (their `:author-copies`)."
  [segments]
  (into #{} (mapcat :author-copies) segments))
