(ns herald.feed.events-test
  "The feed on the Kafka log with the memory store, one instance over HTTP: the author reads a post at once, the Kafka Streams jobs deliver and index it, lag in /metrics (this instance's and the cluster's), a record the jobs cannot apply goes to the dead-letter topic; config errors name the key."
  (:require [clojure.edn]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.events.kafka :as kafka]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(defn kafka-events
  "An :events config on the test broker with its own topics and groups (prefix), its state under `dir`."
  [bootstrap prefix dir]
  {:type :kafka :bootstrap-servers bootstrap :topic-prefix prefix :partitions 4 :data-dir dir
   :commit-interval-ms 100 :streams {"session.timeout.ms" 6000 "heartbeat.interval.ms" 1000}})

(defn read-records
  "`(f record)` of each of the first `n` records of `topic` (read from the start by a fresh consumer group, string
  keys and values), or of what came within `timeout-ms`."
  [bootstrap topic n timeout-ms f]
  (with-open [c (let [^java.util.Map props {"bootstrap.servers" bootstrap "auto.offset.reset" "earliest"
                                            "enable.auto.commit" "false" "group.id" (str "read-" (random-uuid))}]
                  (org.apache.kafka.clients.consumer.KafkaConsumer.
                   props (org.apache.kafka.common.serialization.StringDeserializer.)
                   (org.apache.kafka.common.serialization.StringDeserializer.)))]
    (let [^java.util.Collection topics [topic]] (.subscribe c topics))
    (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
      (loop [got []]
        (if (or (>= (count got) (long n)) (> (System/currentTimeMillis) deadline))
          got
          (recur (into got (map f) (.poll c (java.time.Duration/ofMillis 200)))))))))

(defn- read-topic
  "[key value] of the first `n` records of `topic` (values read as EDN), or what came within `timeout-ms`."
  [bootstrap topic n timeout-ms]
  (read-records bootstrap topic n timeout-ms
                (fn [^org.apache.kafka.clients.consumer.ConsumerRecord r] [(.key r) (clojure.edn/read-string (.value r))])))

(deftest ^:integration posts-go-through-kafka
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-kafka-")
          events (kafka-events bootstrap (str "t" (random-uuid) "-") dir)
          sys (u/start-feed! nil {:events events})
          base (feed/url sys)
          req (fn [& args] (apply u/request base args))
          id #(get-in (req "/participant" :method :post :json {:name %}) [:json "id"])]
      (try
        (let [a (id "Ann") b (id "Bob") c (id "Cy")
              link #(str "/participant/" %)]
          (req (str (link a) "/friends") :method :post :json {:to (link b)})
          (req (str (link a) "/friends") :method :post :json {:to (link c)})
          (dotimes [i 30]
            (is (= 200 (:status (req (str (link a) "/outbound") :method :post
                                     :json {:subject (str "s" i) :story (str "kafka word" i)}))))
            (is (= (inc i) (count (:json (req (str (link a) "/outbound?limit=100"))))) "the author reads it at once"))
          (is (true? (feed/await-fanout sys 60000)))
          (doseq [r [b c]]
            (is (= (map #(str "s" %) (range 29 -1 -1))
                   (map #(get % "subject") (:json (req (str (link r) "/inbound?limit=100")))))
                "every post once, newest first"))
          (is (= 30 (count (:json (req "/outbound?keywords=kafka&limit=100")))))
          (is (= [(link a)] (:json (req "/outbound?keywords=word7"))))
          (let [m (:body (req "/metrics"))]
            (is (re-find #"(?m)^herald_feed_fanout_fan_out_lag 0$" m))
            (is (re-find #"(?m)^herald_feed_fanout_index_lag 0$" m))
            (is (re-find #"(?m)^herald_feed_fanout_submitted_total 30$" m)))
          (testing "the cluster-wide lag (the consumer groups' committed offsets) comes down to 0"
            (let [deadline (+ (System/currentTimeMillis) 60000)
                  m (loop [] (let [m (:body (req "/metrics"))]
                               (if (or (and (re-find #"(?m)^herald_feed_fanout_fan_out_cluster_lag 0$" m)
                                            (re-find #"(?m)^herald_feed_fanout_index_cluster_lag 0$" m))
                                       (> (System/currentTimeMillis) deadline))
                                 m
                                 (do (Thread/sleep 200) (recur)))))]
              (is (re-find #"(?m)^herald_feed_fanout_fan_out_cluster_lag 0$" m))
              (is (re-find #"(?m)^herald_feed_fanout_index_cluster_lag 0$" m))))
          (testing "a record the jobs cannot apply goes to the dead-letter topic, counted; the jobs go on"
            (with-open [p (kafka/producer (kafka/check (dissoc events :type)))]
              (kafka/send! p (kafka/posts-topic events) "x" (kafka/edn-text {:foo 1}) 10000)
              (kafka/send! p (kafka/posts-topic events) "x" (byte-array [(unchecked-byte 0xB1) 99]) 10000))
            (let [deadline (+ (System/currentTimeMillis) 60000)
                  count-line #"(?m)^herald_feed_fanout_dead_letters_total (\d+)$"
                  n (loop [] (let [n (some-> (re-find count-line (:body (req "/metrics"))) second parse-long)]
                               (if (or (= 4 n) (> (System/currentTimeMillis) deadline)) n (do (Thread/sleep 200) (recur)))))]
              (is (= 4 n) "two records, each refused by both jobs"))
            (let [dead (read-topic bootstrap (kafka/dead-letter-topic events) 4 20000)]
              (is (= #{"feed-fan-out" "feed-index"} (set (map first dead))) "keyed by the job")
              (is (= 2 (count (filter #(:bytes (second %)) dead))) "the undecodable record's bytes, by each job")
              (is (every? #(re-find #"bad-record|Undecodable" (:error (second %))) dead)))
            (is (= 200 (:status (req (str (link a) "/outbound") :method :post :json {:subject "after" :story "after"}))))
            (is (true? (feed/await-fanout sys 60000)))
            (is (= "after" (get-in (req (str (link b) "/inbound?limit=1")) [:json 0 "subject"])))))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))

(deftest the-kafka-log-needs-a-derivable-store
  (let [e (try (u/start-feed! (u/temp-dir "feed-kafka-embedded-") {:events {:type :kafka}}) nil
               (catch clojure.lang.ExceptionInfo e (ex-cause e)))]
    (is (= {:type :herald.feed/config :key [:events :type] :value :kafka} (ex-data e)))))

(deftest events-options-are-checked-naming-the-key
  (doseq [[events k] [[{:type :kafka :partitons 3} [:events :partitons]]
                      [{:type :kafka :partitions 0} [:events :partitions]]
                      [{:type :kafka :retries -1} [:events :retries]]
                      [{:type :kafak} [:events :type]]]]
    (let [e (try (u/start-feed! nil {:events events}) nil (catch clojure.lang.ExceptionInfo e (ex-cause e)))]
      (is (= :herald.feed/config (:type (ex-data e))) (pr-str events))
      (is (= k (:key (ex-data e))) (pr-str events)))))

(deftest ^:integration a-post-the-store-refuses-for-good-goes-to-the-dead-letter-topic
  ;; the one fault no real server here gives on demand (a Cassandra write refused for a bad value) is mocked at
  ;; store/deliver-all!; Kafka, the jobs, the memory store and HTTP are real. Before the refusal, an outage (an
  ;; unavailable store) is retried, never dead-lettered.
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-kafka-rejected-")
          events (assoc (kafka-events bootstrap (str "t" (random-uuid) "-") dir)
                        :backoff-ms 10 :backoff-max-ms 50 :rejected-retries 3 :fan-out-flush-ms 20)
          real-deliver @#'herald.feed.store.feeds/deliver-all!
          down-until (atom 0)
          attempts (atom 0)]
      (with-redefs [herald.feed.store.feeds/deliver-all!
                    (fn [s deliveries]
                      (swap! attempts inc)
                      (when (< (System/currentTimeMillis) (long @down-until))
                        (throw (ex-info "cassandra: a request failed: no node" {:type :herald.feed.store.cassandra/unavailable})))
                      (when (some #(= "poison" (get-in % [:post :subject])) deliveries)
                        (throw (ex-info "cassandra: a request failed: bad value" {:type :herald.feed.store.cassandra/invalid-query})))
                      (real-deliver s deliveries))]
        (let [sys (u/start-feed! nil {:events events})
              base (feed/url sys)
              req (fn [& args] (apply u/request base args))
              id #(get-in (req "/participant" :method :post :json {:name %}) [:json "id"])
              dead-count #(some-> (re-find #"(?m)^herald_feed_fanout_dead_letters_total (\d+)$" (:body (req "/metrics"))) second parse-long)]
          (try
            (let [a (id "Ann") b (id "Bob") link #(str "/participant/" %)
                  post! #(:status (req (str (link a) "/outbound") :method :post :json {:subject % :story (str "story " %)}))]
              (req (str (link a) "/friends") :method :post :json {:to (link b)})
              (testing "an outage of the store is retried: nothing goes to the dead-letter topic"
                (reset! down-until (+ (System/currentTimeMillis) 1500))
                (is (= 200 (post! "during-outage")))
                (Thread/sleep 1000)
                (is (= 0 (dead-count)))
                (is (true? (feed/await-fanout sys 30000)))
                (is (= ["during-outage"] (map #(get % "subject") (:json (req (str (link b) "/inbound")))))))
              (testing "a post the store refuses for good: retried :rejected-retries times, then dead-lettered; the others are delivered"
                (reset! attempts 0)
                (is (= 200 (post! "before")))
                (is (= 200 (post! "poison")))
                (is (= 200 (post! "after")))
                (is (true? (feed/await-fanout sys 30000)) "the job's partition is not held")
                (is (= ["after" "before" "during-outage"] (map #(get % "subject") (:json (req (str (link b) "/inbound"))))))
                (is (<= 4 @attempts) "the batch was tried again before it was split")
                (is (= 1 (dead-count)) "counted in /metrics (the index job writes the post: only the fan-out refused it)")
                (let [[[k v]] (read-topic bootstrap (kafka/dead-letter-topic events) 1 20000)]
                  (is (= "feed-fan-out" k))
                  (is (= "poison" (get-in v [:segment :post :subject])))
                  (is (re-find #"bad value" (:error v))))))
            (finally (feed/stop! sys) (u/delete-tree! dir))))))))
