(ns herald.feed.events.redrive
  "Re-drive: re-publishes what the dead-letter topic holds to the posts topic (the jobs' input) once its cause is fixed, each post folded with the changes made to it since, so that the order of a post's versions holds; safe to run twice."
  (:require [herald.feed.events.dead-letter :as dl]
            [herald.feed.events.kafka :as kafka])
  (:import (herald.flow.log RecordCodec)
           (java.time Duration)
           (java.util Collection Map)
           (org.apache.kafka.clients.consumer ConsumerRecord KafkaConsumer OffsetAndMetadata OffsetAndTimestamp)
           (org.apache.kafka.clients.producer KafkaProducer RecordMetadata)
           (org.apache.kafka.common PartitionInfo TopicPartition)))

(set! *warn-on-reflection* true)

;; Why fold: a dead-lettered post may have been edited or deleted since, and those changes were applied (or
;; dead-lettered themselves) while the post was not: re-publishing the post as it was would bring an old text back
;; to the friends' inbound copies (an edit applies to the recipients the store has recorded: none yet), or a
;; deleted post back to search once OpenSearch forgot the delete (index.gc_deletes). The re-drive therefore reads
;; the post's partition of the posts topic from the post's time on and re-publishes its state at the end: the post
;; with its last edit's text and :version, or its delete (docs/adr/0016-dead-letters-and-re-drive.md).

(def ^:private slack-ms
  "How far before a post's :ts the scan of its partition starts (the record's timestamp is the producer's clock)."
  60000)

(defn- consumer ^KafkaConsumer [o group]
  (kafka/consumer o group {"max.poll.records" 1000}))

(defn group-id "The consumer group whose offsets say how far the dead-letter topic was re-driven." [o]
  (str (:topic-prefix o) "redrive"))

(defn- partitions [^KafkaConsumer c topic]
  (mapv #(TopicPartition. topic (.partition ^PartitionInfo %)) (.partitionsFor c ^String topic (Duration/ofSeconds 30))))

(defn- read-range
  "`(f record)` of every record of the assigned partitions from their positions to `ends` ({TopicPartition
  offset}), in order per partition, the nil ones left out (as they come: a scan of a whole partition of the posts
  topic holds only what `f` keeps)."
  ([c ends] (read-range c ends identity))
  ([^KafkaConsumer c ^Map ends f]
   (loop [got []]
     (if (every? (fn [[tp end]] (>= (.position c tp) (long end))) ends)
       got
       (recur (into got (keep (fn [^ConsumerRecord r]
                                (when (< (.offset r) (long (get ends (TopicPartition. (.topic r) (.partition r)))))
                                  (f r))))
                    (.poll c (Duration/ofMillis 500))))))))

(defn- dead-letters
  "[envelopes ends] of the dead-letter topic past `group`'s committed offsets (from the beginning with `all?`)."
  [^KafkaConsumer c topic all?]
  (let [tps (partitions c topic)
        ends (.endOffsets c ^Collection tps)
        committed (.committed c (set tps))]
    (.assign c ^Collection tps)
    (doseq [^TopicPartition tp tps]
      (if-let [^OffsetAndMetadata m (when-not all? (get committed tp))]
        (.seek c tp (.offset m))
        (.seekToBeginning c [tp])))
    [(mapv #(assoc (dl/read-record %) ::partition (.partition ^ConsumerRecord %)) (read-range c ends)) ends]))

(defn partition-of
  "The partition of the posts topic (`n` partitions) that the producer's default partitioner gives key `k`."
  ^long [k ^long n]
  (kafka/partition-of k n))

(defn- scan
  "The records of `topic`'s partition `p` from offset `from` (or the first at or after `from-ms` when `from` is
  nil) up to `end` that `want?` keeps, decoded, with :offset; unreadable ones left out."
  [^KafkaConsumer c topic p from from-ms end want?]
  (let [tp (TopicPartition. topic (int p))
        start (or from (some-> ^OffsetAndTimestamp (get (.offsetsForTimes c {tp (long from-ms)}) tp) .offset))]
    (when (and start (< (long start) (long end)))
      (.assign c [tp])
      (.seek c tp (long start))
      (read-range c {tp end}
                  (fn [^ConsumerRecord r]
                    (let [v (try (RecordCodec/decode ^bytes (.value r)) (catch Exception _ nil))]
                      (when (and (map? v) (want? v)) (assoc v ::offset (.offset r)))))))))

(defn- version ^long [p] (long (or (:version p) (:ts p) 0)))

(defn fold
  "The record that re-publishes a post's state after `records` (its records of the posts topic: `{:post
  :recipients}`, `{:edit}`, `{:delete}`, in any order): its delete when it was deleted, else its post with the
  newest edit's text and `:version`, else (no post record found) its newest edit; nil when there is none."
  [records]
  (let [{:keys [post edit delete]}
        (reduce (fn [acc r]
                  (cond (:post r) (update acc :post #(or % r))
                        (:edit r) (update acc :edit #(if (and % (> (version %) (version (:edit r)))) % (:edit r)))
                        (:delete r) (assoc acc :delete (:delete r))
                        :else acc))
                {} records)]
    (cond delete {:delete delete}
          post {:post (merge (:post post) (select-keys edit [:subject :story :version]))
                :recipients (vec (:recipients post))}
          edit {:edit edit})))

(defn- post-id [r] (:id (dl/post-of r)))

(defn- plan
  "What to re-publish for `letters` (dead-letter envelopes with a post's :segment): `:records`, [post-id record]
  in dead-letter order, one per post, each its `fold` over its dead letters and what `posts-topic` holds of it
  from its time on; `:ends` {partition end offset} of that scan; `:parts` the partitions scanned."
  [^KafkaConsumer c posts-topic letters]
  (let [tps (partitions c posts-topic)
        ends (into {} (map (fn [[^TopicPartition tp e]] [(.partition tp) e])) (.endOffsets c ^Collection tps))
        own (group-by post-id (map :segment letters))
        order (distinct (map (comp post-id :segment) letters))
        by-part (group-by #(partition-of (:from (dl/post-of (first (own %)))) (count tps)) order)
        scanned (group-by post-id
                          (for [[part ids] by-part
                                :let [from-ms (max 0 (- (quot (long (reduce min (map #(or (:ts (dl/post-of (first (own %)))) 0) ids))) 1000) slack-ms))]
                                r (scan c posts-topic part nil from-ms (ends part) #(contains? own (post-id %)))]
                            (dissoc r ::offset)))]
    {:records (vec (for [id order :let [r (fold (concat (own id) (scanned id)))] :when r] [id r]))
     :ends ends :parts (set (keys by-part))}))

(defn- usable? [job letter]
  (and (post-id (:segment letter)) (or (nil? job) (= (name job) (name (:job letter))))))

(defn commit-offsets
  "{TopicPartition offset} the re-drive group commits after re-driving `letters` (envelopes with :offset and
  ::partition) read up to `ends` ({TopicPartition end}): each partition's end; with `job`, the offset of the
  partition's first dead letter of another job when there is one, so that a later re-drive still finds it (the
  letters of `job` after it are then re-published again: harmless, the outputs are idempotent)."
  [ends letters job]
  (into {} (for [[^TopicPartition tp e] ends
                 :let [left (keep #(when (and (= (.partition tp) (::partition %)) (post-id (:segment %)) (not (usable? job %)))
                                     (:offset %))
                                  letters)]]
             [tp (if (seq left) (reduce min left) e)])))

(defn- send-all!
  "Appends each record of `rs` to the posts topic keyed by its sender (as the instances do), each acknowledged;
  returns the #{[partition offset]} written."
  [^KafkaProducer p o rs]
  (set (for [r rs :let [^RecordMetadata m (kafka/send! p (kafka/posts-topic o) (:from (dl/post-of r)) (kafka/record-bytes r)
                                                      (:send-timeout-ms o))]]
         [(.partition m) (.offset m)])))

(defn redrive!
  "Re-publishes the dead letters of the Kafka log `events` (the `:events` options, see herald.feed.events.kafka/check)
  past the consumer group `<prefix>redrive`'s offsets to the posts topic, one record per post folded with its later
  changes (`fold`), then changes appended to those posts while it ran (after the scan, before its records: so
  that they come after them again), then commits the group's offsets (with `:job`, not past a dead letter of another job: `commit-offsets`). Idempotent as the jobs' outputs are (upserts
  and deletes by post id): a second run finds nothing new; one with `:all?` re-publishes everything again,
  harmlessly. Dead letters without a post (an unreadable record) are counted and left.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:job` | string | all | only the dead letters of this job (`feed-fan-out`, `feed-index`) |
  | `:all?` | boolean | false | from the topic's beginning instead of the group's offsets |
  | `:dry-run?` | boolean | false | plan only: nothing appended, no offset committed |

  Returns `{:dead-letters n :unusable n :other-job n :posts n :republished n :late-changes n :records [[id record]]}`."
  [events {:keys [job all? dry-run?]}]
  (let [o (kafka/check events)
        posts (kafka/posts-topic o)]
    (with-open [dc (consumer o (group-id o)) sc (consumer o nil)]
      (let [[letters dl-ends] (dead-letters dc (kafka/dead-letter-topic o) all?)
            {:keys [records ends parts]} (plan sc posts (filter #(usable? job %) letters))
            summary {:dead-letters (count letters) :unusable (count (remove #(post-id (:segment %)) letters))
                     :other-job (count (filter #(and (post-id (:segment %)) (not (usable? job %))) letters))
                     :posts (count records) :republished 0 :late-changes 0 :records records}]
        (if dry-run?
          summary
          (with-open [p (kafka/producer o)]
            (let [written (send-all! p o (map second records))
                  ids (set (map first records))
                  new-ends (into {} (map (fn [[^TopicPartition tp e]] [(.partition tp) e]))
                                 (.endOffsets sc ^Collection (mapv #(TopicPartition. posts (int %)) parts)))
                  late (vec (for [part parts
                                  r (scan sc posts part (ends part) nil (new-ends part) #(ids (post-id %)))
                                  :when (and (not (:post r)) (not (written [part (::offset r)])))]
                              (dissoc r ::offset)))]
              (send-all! p o late)
              (.commitSync dc ^Map (into {} (for [[tp e] (commit-offsets dl-ends letters job)] [tp (OffsetAndMetadata. (long e))])))
              (assoc summary :republished (count records) :late-changes (count late)))))))))
