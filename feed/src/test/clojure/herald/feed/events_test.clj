(ns herald.feed.events-test
  "The feed on the Kafka log with the memory store, one instance over HTTP: the author reads a post at once, the Kafka Streams jobs deliver and index it, lag in /metrics; config errors name the key."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.servers.kafka :as sk]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(defn kafka-events
  "An :events config on the test broker with its own topics and groups (prefix), its state under `dir`."
  [bootstrap prefix dir]
  {:type :kafka :bootstrap-servers bootstrap :topic-prefix prefix :partitions 4 :data-dir dir
   :commit-interval-ms 100 :streams {"session.timeout.ms" 6000 "heartbeat.interval.ms" 1000}})

(deftest ^:integration posts-go-through-kafka
  (sk/with-kafka bootstrap
    (let [dir (u/temp-dir "feed-kafka-")
          sys (u/start-feed! nil {:events (kafka-events bootstrap (str "t" (random-uuid) "-") dir)})
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
            (is (re-find #"(?m)^herald_feed_fanout_submitted_total 30$" m))))
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
