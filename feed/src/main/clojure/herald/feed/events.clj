(ns herald.feed.events
  "The feed's event log, the top-level `:events` config: `:local` (the store's own durable records, the jobs in-process) or `:kafka` (the :scale profile: Kafka is the log, the jobs run on Kafka Streams); `start-fanout` gives the matching herald.feed.fanout/Fanout."
  (:require [herald.feed.errors :as err]
            [herald.feed.events.dead-letter :as dead-letter]
            [herald.feed.events.ids :as ids]
            [herald.feed.events.kafka :as kafka]
            [herald.feed.events.receipts :as receipts]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs.derived :as derived]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.clock :as clock]
            [herald.flow :as flow])
  (:import (java.util.concurrent.atomic AtomicLong)
           (org.apache.kafka.clients.producer KafkaProducer)))

(set! *warn-on-reflection* true)

(defn kafka?
  "True when the `:events` config names Kafka."
  [events]
  (= :kafka (:type events)))

(defn- caught-up?
  "True once both jobs' consumer groups have committed past what the posts topic held at the call
  (herald.flow/await-caught-up: every instance's partitions), within `timeout-ms`."
  [handles ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (every? #(flow/await-caught-up % (max 1 (- deadline (System/currentTimeMillis)))) handles)))

(defn- input-lag
  "The posts not yet through the job of job-metrics map `m` on this instance's partitions."
  [m]
  (long (or (get-in m [:tasks :posts :lag]) 0)))

(defn- group-lag
  "The posts of the whole cluster not yet through the job of job-metrics map `m` (its consumer group's committed
  offsets), or nil while unknown."
  [m]
  (get-in m [:kafka :group-lag]))

(defn- dead-letters-failing?
  "True while a job of job-metrics maps `ms` cannot write a dead letter (its `:on-error` throwing: the partition
  waits; herald.flow retries it), or the dead letters' `writer` failed lately (the dead letter of a store write
  given up, which herald.flow retries as a failing output write)."
  [ms writer]
  (or (boolean (some :on-error-failing? (mapcat (comp vals :tasks) ms))) (dead-letter/failing? writer)))

(defn- close-kafka! [{:keys [fan-out index]} ^KafkaProducer producer ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)
        left #(max 1 (- deadline (System/currentTimeMillis)))]
    (try (doseq [h [fan-out index]] (flow/kill-job h {:timeout-ms (left)}))
         (finally (.close producer (java.time.Duration/ofMillis (left)))))
    (< (System/currentTimeMillis) deadline)))

(defn- maybe-recorded
  "Runs (f); an outage it throws becomes ex-info :herald.feed/maybe-recorded (a 503 that says why, naming
  Idempotency-Key): the post may already be durable on the log, which the fan-out job makes visible (issue 10)."
  [f]
  (try (f)
       (catch Exception e
         (throw (if (err/unavailable? e)
                  (ex-info (str "storage temporarily unavailable: the post may have been recorded and may appear shortly;"
                                " retry with the same Idempotency-Key to publish it exactly once")
                           {:type :herald.feed/maybe-recorded} e)
                  e)))))

(defn kafka-fanout
  "The fan-out over the Kafka log (see herald.feed.events.kafka/check for `opts`). On start it creates the topics
  when missing and starts the fan-out and indexing jobs on Kafka Streams (herald.feed.jobs.derived). `publish!`
  gives the post an id (herald.feed.events.ids: unique across instances) and a :ts (this instance's clock),
  appends {:post :recipients} to the posts topic keyed by the sender and waits for the brokers' acknowledgement
  (acks=all, idempotent producer), then upserts the author's outbound copy (read-your-writes from any instance)
  and returns the post; the copy's receipt rides on the next record of the partition (herald.feed.events.receipts),
  so that the fan-out job does not write it again. A record a job cannot apply goes to the dead-letter topic (herald.feed.events.dead-letter/writer). `store`
  must have the feeds/LoggedFeeds role."
  [store opts]
  (when-not (feeds/logged-feeds? store)
    (throw (ex-info "the store cannot be derived from the Kafka log (no feeds/LoggedFeeds role): use the :scale or :memory store with :events :kafka"
                    {:type :herald.feed/config :key [:events :type] :value :kafka})))
  (let [o (kafka/check opts)
        {:keys [posts dead-letter]} (kafka/ensure-topics! o)
        producer (kafka/producer o)
        ;; the dead letters' own producer, made on the first one
        dead-producer (dead-letter/lazy-producer #(dead-letter/producer o))
        dead (dead-letter/writer (:get dead-producer) dead-letter (dead-letter/timeout-ms o))
        ids (ids/allocator #(kafka/lease-block! producer o))
        written (try (receipts/receipts (count (.partitionsFor producer ^String posts)))
                     (catch Throwable t (.close producer) (throw t)))
        last-ts (AtomicLong. (clock/now-micros))
        published (AtomicLong.)
        handles (try (derived/submit-jobs! store posts (assoc o :dead-letter! (:dead-letter! dead)))
                     (catch Throwable t (.close producer) (throw t)))
        ;; nil: the producer's own bounds (delivery.timeout.ms, max.block.ms), no timer per post (kafka/send!)
        send! (fn [k record] (kafka/send! producer posts k (kafka/record-bytes (receipts/attach written record k)) nil))
        append! (fn [{:keys [post] :as job}]
                  (send! (:from post) job)
                  (.incrementAndGet published))
        author-copy! (fn [p] (feeds/put-outbound! store p) (receipts/note! written (:from p) (:id p)))
        ;; a change record ({:edit p} / {:delete p}) keyed by the sender, like the post it changes
        append-change! (fn [change]
                         (send! (:from (or (:edit change) (:delete change))) change))]
    (reify
      fanout/KeyedFanout
      ;; reserve (key -> this prepared post) in the graph role before the append; a repeat re-appends the reserved
      ;; post unless the store has its author's copy (written only after an acknowledged append), and upserts it
      (-publish-keyed! [_ post recipients k]
        (when-not (keys/key-reservations? store) (throw (fanout/keys-unsupported)))
        (let [fresh (assoc (feeds/new-post post) :id (ids/next-id! ids) :ts (clock/tick! last-ts))
              rec (keys/reserve-key! store (assoc k :post fresh))
              p (:post rec)]
          (when (= (:fingerprint rec) (:fingerprint k))
            (maybe-recorded
             #(when (or (:created? rec) (nil? (feeds/post store (:id p))))
                (append! {:post p :recipients (vec (distinct recipients))})
                (author-copy! p))))
          rec))

      fanout/PostChanges
      ;; issue 11: the change goes on the posts topic keyed by the sender (after the post's own record, in the same
      ;; partition), then the author's copy changes (read-your-writes); the jobs apply it to the inbound copies and
      ;; the index
      (-edit-post! [_ post changes]
        ;; :version orders the versions of a post in stores that keep the newest (Cassandra's write timestamps): a
        ;; fan-out of the post itself that lands after this edit's author copy must not bring the old text back
        (let [p (assoc (merge post (select-keys changes [:subject :story]))
                       :version (max (clock/tick! last-ts) (inc (long (or (:version post) (:ts post) 0)))))]
          (append-change! {:edit p})
          (feeds/put-outbound! store p)
          p))
      (-delete-post! [_ post]
        (append-change! {:delete post})
        (feeds/delete-outbound! store post)
        post)

      fanout/Fanout
      (-publish! [_ post recipients]
        (let [p (assoc (feeds/new-post post) :id (ids/next-id! ids) :ts (clock/tick! last-ts))]
          (maybe-recorded #(do (append! {:post p :recipients (vec (distinct recipients))})
                               (author-copy! p)))
          p))
      (-submit! [_ job] (append! job) nil)
      (-await-idle [_ timeout-ms] (caught-up? (vals handles) timeout-ms))
      (-stats [_]
        ;; each job's metrics once per call (they read every Kafka client metric)
        (let [fm (flow/job-metrics (:fan-out handles)) im (flow/job-metrics (:index handles))]
          (cond-> {:submitted (.get published) :dead-letters (reduce + 0 (vals (dead-letter/count-map (:counts dead))))
                   :dead-letters-by-job (merge {"feed-fan-out" 0 "feed-index" 0} (dead-letter/count-map (:counts dead))) :fan-out-lag (input-lag fm) :index-lag (input-lag im)
                   :dead-letter-failing (if (dead-letters-failing? [fm im] dead) 1 0)}
            (group-lag fm) (assoc :fan-out-cluster-lag (group-lag fm))
            (group-lag im) (assoc :index-cluster-lag (group-lag im)))))
      (-close! [_ timeout-ms]
        (try (close-kafka! handles producer timeout-ms)
             (finally ((:close! dead-producer) 1000)))))))

(defn start-fanout
  "The fan-out for the `:events` config `events` over `store`: the in-process jobs over the store's log for
  `{:type :local}` (herald.feed.jobs.posts/flow-fanout with the `:fanout` options `fanout-opts`), the Kafka log
  for `{:type :kafka ...}` (`kafka-fanout`). Throws ex-info {:type :herald.feed/config :key [:events :type]} for
  another type."
  [store events fanout-opts]
  (case (:type events :local)
    :local ((requiring-resolve 'herald.feed.jobs.posts/flow-fanout) store fanout-opts)
    :kafka (kafka-fanout store (dissoc events :type))
    (throw (ex-info (str ":events :type must be one of :local, :kafka, got " (pr-str (:type events)))
                    {:type :herald.feed/config :key [:events :type] :value (:type events)}))))
