(ns herald.flow.kafka.progress
  "Progress of a job on Kafka Streams: await-caught-up (the application's committed offsets against the input topics' end offsets) and lag per task and partition."
  (:import (java.util Collection Map)
           (java.util.concurrent TimeUnit)
           (org.apache.kafka.clients.admin Admin ListOffsetsResult$ListOffsetsResultInfo OffsetSpec TopicDescription)
           (org.apache.kafka.clients.consumer OffsetAndMetadata)
           (org.apache.kafka.common TopicPartition TopicPartitionInfo)))

(set! *warn-on-reflection* true)

(defn- partitions
  "The TopicPartitions of `topics`."
  [^Admin admin topics]
  (let [m (.get (.allTopicNames (.describeTopics admin ^Collection (vec topics))) 10 TimeUnit/SECONDS)]
    (for [[^String t ^TopicDescription d] m, ^TopicPartitionInfo p (.partitions d)]
      (TopicPartition. t (.partition p)))))

(defn end-offsets
  "TopicPartition -> end offset (the offset the next record will get) of every partition of `topics`."
  [^Admin admin topics]
  (let [tps (partitions admin topics)
        r (.all (.listOffsets admin ^Map (into {} (for [tp tps] [tp (OffsetSpec/latest)]))))]
    (into {} (for [[tp ^ListOffsetsResult$ListOffsetsResultInfo i] (.get r 10 TimeUnit/SECONDS)] [tp (.offset i)]))))

(defn committed-offsets
  "TopicPartition -> committed offset of consumer group `group` (partitions it never committed are absent)."
  [^Admin admin ^String group]
  (let [m (.get (.partitionsToOffsetAndMetadata (.listConsumerGroupOffsets admin group)) 10 TimeUnit/SECONDS)]
    (into {} (for [[tp ^OffsetAndMetadata o] m :when o] [tp (.offset o)]))))

(defn- caught-up?
  "Whether the committed offsets reach `ends`; false too when the brokers do not answer (asked again later)."
  [admin group ends]
  (try (let [c (committed-offsets admin group)]
         (every? (fn [[tp ^long end]] (>= (long (get c tp 0)) end)) ends))
       (catch Exception _ false)))

(defn await-caught-up
  "True once the committed offsets of application `group` reach, on every partition of `topics`, the end
  offsets taken at the call (a plugin output flushes before each commit, so what they cover is written);
  false when `timeout-ms` passes or `(ended?)` holds (a killed or failed job has not caught up). A partition
  the group never committed counts as 0. Polls every 50 ms; brokers that do not answer are asked again
  until the timeout."
  [^Admin admin group topics ended? timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))
        ends (loop [] (or (try (end-offsets admin topics) (catch Exception _ nil))
                          (when (< (System/currentTimeMillis) deadline) (Thread/sleep 200) (recur))))]
    (loop []
      (cond (or (nil? ends) (ended?)) false
            (caught-up? admin group ends) true
            (> (System/currentTimeMillis) deadline) false
            :else (do (Thread/sleep 50) (recur))))))

(defn group-lag
  "The records of `topics` past the committed offsets of consumer group `group`, summed over every partition
  (so over every member of the group: the whole cluster's backlog, behind by at most a commit interval). A
  partition the group never committed counts from 0."
  ^long [^Admin admin group topics]
  (let [ends (end-offsets admin topics) c (committed-offsets admin group)]
    (reduce + 0 (for [[tp ^long end] ends] (max 0 (- end (long (get c tp 0))))))))

(defn lag-by-partition
  "partition -> records-lag of `topic` in consumer metrics `ms` (seq of [group name tags value]): the
  partitions this instance reads."
  [ms topic]
  (into (sorted-map) (for [[g n tags v] ms :when (and (= g "consumer-fetch-manager-metrics") (= n "records-lag")
                                                      (= topic (get tags "topic")) (get tags "partition"))]
                       [(Long/parseLong (get tags "partition")) (long v)])))
