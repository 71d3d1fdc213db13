(ns herald.feed.events.dead-letter-test
  "^:integration issue 10 on the Kafka log, with a real broker, the memory store and HTTP: while the dead-letter topic refuses every record (a real broker-side refusal: its max.message.bytes is smaller than any dead letter), an undecodable record of the posts topic holds both jobs' committed offsets below it and the post after it waits; once the topic takes records again, the dead letter is there (at least once per job) and the posts after it are delivered, exactly once."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.events-test :as et]
            [herald.feed.events.dead-letter :as dead-letter]
            [herald.feed.events.kafka :as kafka]
            [herald.feed.idempotency-test :as it]
            [herald.feed.jobs.derived :as derived]
            [herald.feed.test-util :as u]
            [herald.flow.kafka-broker :as sk])
  (:import (java.util Properties)
           (java.util.concurrent TimeUnit)
           (org.apache.kafka.clients.admin Admin AlterConfigOp AlterConfigOp$OpType ConfigEntry NewTopic)
           (org.apache.kafka.clients.consumer ConsumerRecord OffsetAndMetadata)
           (org.apache.kafka.common.config ConfigResource ConfigResource$Type)))

(set! *warn-on-reflection* true)

(defn- admin ^Admin [bootstrap] (Admin/create (doto (Properties.) (.put "bootstrap.servers" bootstrap))))

(defn- committed
  "Consumer group `group`'s committed offset of partition 0 (the posts topic here has one), or 0."
  ^long [^Admin a group]
  (let [m (.get (.partitionsToOffsetAndMetadata (.listConsumerGroupOffsets a ^String group)) 10 TimeUnit/SECONDS)]
    (or (some (fn [[_ ^OffsetAndMetadata o]] (when o (.offset o))) m) 0)))

(defn- set-max-message-bytes! [^Admin a topic n]
  (let [r (ConfigResource. ConfigResource$Type/TOPIC topic)
        op (AlterConfigOp. (ConfigEntry. "max.message.bytes" (str n)) AlterConfigOp$OpType/SET)]
    (.get (.all (.incrementalAlterConfigs a {r [op]})) 10 TimeUnit/SECONDS)))

(defn- dead-letters
  "The values (EDN-read) of the dead-letter topic, what came within `ms`."
  [bootstrap topic ms]
  (et/read-records bootstrap topic Long/MAX_VALUE ms (fn [^ConsumerRecord r] (clojure.edn/read-string (.value r)))))

(deftest ^:integration an-unwritable-dead-letter-topic-holds-the-offsets-and-loses-nothing
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-dead-letter-")
          events (assoc (et/kafka-events bootstrap (str "t" (random-uuid) "-") dir) :partitions 1 :fan-out-flush-ms 20)
          dlt (kafka/dead-letter-topic events)
          groups (derived/group-ids (kafka/check (dissoc events :type)))]
      (with-open [a (admin bootstrap)]
        ;; the fault, made by the broker: the dead-letter topic exists (the feed leaves it as it is) and refuses any
        ;; record over 64 bytes, smaller than every dead letter
        (.get (.all (.createTopics a [(doto (NewTopic. ^String dlt 1 (short 1)) (.configs {"max.message.bytes" "64"}))]))
              20 TimeUnit/SECONDS)
        (let [sys (u/start-feed! nil {:events events})
              base (feed/url sys)
              req (fn [& args] (apply u/request base args))
              [ann bob] (it/setup! base)
              post! #(:status (req (str (it/link ann) "/outbound") :method :post :json {:subject % :story %}))
              inbound #(mapv (fn [p] (get p "subject")) (:json (req (str (it/link bob) "/inbound?limit=100"))))
              failing #(some-> (re-find #"(?m)^herald_feed_fanout_dead_letter_failing (\d+)$" (:body (req "/metrics"))) second parse-long)
              dead-count #(some-> (re-find #"(?m)^herald_feed_fanout_dead_letters_total (\d+)$" (:body (req "/metrics"))) second parse-long)]
          (try
            (is (= 200 (post! "before")))
            (is (true? (feed/await-fanout sys 60000)))
            (let [bad (with-open [p (kafka/producer (kafka/check (dissoc events :type)))]
                        (.offset (kafka/send! p (kafka/posts-topic events) "x" (byte-array [(unchecked-byte 0xB1) 99]) 10000)))]
              (is (= 200 (post! "after")) "a post after the undecodable record is acknowledged")
              (testing "while the dead-letter topic refuses it, neither job's offset passes the undecodable record"
                (let [t0 (System/currentTimeMillis) samples (atom [])
                      ;; the offsets sampled for 3 s while the gauge and the topic are checked
                      sampling (future (while (< (- (System/currentTimeMillis) t0) 3000)
                                         (swap! samples conj (mapv #(committed a %) groups))
                                         (Thread/sleep 100)))]
                  ;; (after the first failed send: one may wait up to its 5 s before it fails)
                  (is (u/eventually 20000 true? #(= 1 (failing))) "/metrics says the dead letters cannot be written")
                  (is (= [] (dead-letters bootstrap dlt 500)))
                  @sampling
                  (is (every? #(<= (long %) bad) (flatten @samples)) (str "committed " (vec (distinct @samples)) ", the record at " bad)))
                (is (= ["before"] (inbound)) "the post after it waits")
                (is (= 0 (dead-count))))
              (testing "once the topic takes records: the dead letter is there, the posts after it are delivered once"
                (set-max-message-bytes! a dlt 1048588)
                (is (u/eventually 60000 true? #(= ["after" "before"] (inbound))) (pr-str (inbound)))
                (is (= 200 (post! "later")))
                (is (true? (feed/await-fanout sys 60000)))
                (is (= ["later" "after" "before"] (inbound)) "each post once, in order")
                (is (u/eventually 30000 true? #(every? (fn [g] (< bad (committed a g))) groups)) "both jobs' offsets passed it")
                (let [dead (dead-letters bootstrap dlt 2000)]
                  (is (= #{:feed-fan-out :feed-index} (set (map :job dead))) "the record dead-lettered by each job (at least once)")
                  (is (every? :bytes dead) "with its bytes"))
                (is (<= 2 (dead-count)))
                (is (= 0 (failing)))))
            (finally (feed/stop! sys) (u/delete-tree! dir))))))))

(deftest ^:integration a-dead-letter-producer-that-could-not-be-made-is-made-again
  ;; the dead letters' producer is made on the first dead letter, maybe hours after start: a constructor that
  ;; throws then (no bootstrap address resolves for a moment) must not make every later dead letter fail (the
  ;; partitions would wait until a restart), and one made after the close would never be closed
  (sk/with-broker bootstrap
    (let [tries (atom 0)
          lp (dead-letter/lazy-producer
              (fn [] (when (= 1 (swap! tries inc))
                       (throw (org.apache.kafka.common.config.ConfigException. "No resolvable bootstrap urls given in bootstrap.servers")))
                 (dead-letter/producer (kafka/check {:bootstrap-servers bootstrap}))))]
      (is (thrown? org.apache.kafka.common.config.ConfigException ((:get lp))))
      (let [p ((:get lp))]
        (is (instance? org.apache.kafka.clients.producer.KafkaProducer p) "made again on the next dead letter")
        (is (identical? p ((:get lp))) "once"))
      ((:close! lp) 1000)
      (is (thrown? clojure.lang.ExceptionInfo ((:get lp))) "closed: never made again")
      (is (= 2 @tries)))))

(deftest ^:integration an-undecodable-record-too-large-to-copy-whole-is-dead-lettered-in-part
  ;; a record of the posts topic of 800 KB that no job can decode: its dead letter carried it whole in base64
  ;; (1.07 MB), over the producer's max.request.size (1 MB), so no attempt could ever be written and the
  ;; partition waited for ever behind it
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-dead-letter-")
          events (assoc (et/kafka-events bootstrap (str "t" (random-uuid) "-") dir) :partitions 1 :fan-out-flush-ms 20)
          dlt (kafka/dead-letter-topic events)
          sys (u/start-feed! nil {:events events})
          base (feed/url sys)
          req (fn [& args] (apply u/request base args))
          [ann bob] (it/setup! base)
          post! #(:status (req (str (it/link ann) "/outbound") :method :post :json {:subject % :story %}))
          inbound #(mapv (fn [p] (get p "subject")) (:json (req (str (it/link bob) "/inbound?limit=100"))))]
      (try
        (with-open [p (kafka/producer (kafka/check (dissoc events :type)))]
          (kafka/send! p (kafka/posts-topic events) "x" (byte-array (* 800 1024) (unchecked-byte 0xB1)) 10000))
        (is (= 200 (post! "after")))
        (is (u/eventually 30000 true? #(= ["after"] (inbound))) "the post after the large undecodable record is delivered")
        (let [dead (dead-letters bootstrap dlt 2000)]
          (is (= #{:feed-fan-out :feed-index} (set (map :job dead))))
          (is (every? #(= (* 800 1024) (:bytes-length %)) dead) "the record's length")
          (is (every? #(= 65536 (count (.decode (java.util.Base64/getDecoder) ^String (:bytes %)))) dead)
              "its first 64 KiB"))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))
