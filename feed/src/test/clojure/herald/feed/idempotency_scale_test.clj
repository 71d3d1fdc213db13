(ns herald.feed.idempotency-scale-test
  "^:integration issue 10 on the Kafka log: `Idempotency-Key` reserved before the append. With a real broker and the
  memory store: repeats and concurrent repeats make one post; a failure after the acknowledged append (the author's
  copy) or before it (the append itself) is a 503 that says to retry with the key, and the retry answers one post
  that reaches the friend's inbound feed and search exactly once. On the bundled :scale profile (PostgreSQL keeps the
  keys, Cassandra behind a TCP proxy, Kafka, OpenSearch, Redis): Cassandra cut off after the append, the retries
  after it is back answer the one post."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.events-test :as et]
            [herald.feed.idempotency-test :as it]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.servers.proxy :as proxy]
            [herald.feed.servers.scale :as scale]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(defn- maybe-recorded? [{:keys [status json]}]
  (and (= 503 status) (= "Idempotency-Key" (get json "field")) (re-find #"may have been recorded" (str (get json "error")))))

(defn- retry-until-ok
  "POSTs `body` with key `k` until a 200 (a client retrying its 503s with the same key), at most `timeout-ms`."
  [base path body k timeout-ms]
  (u/eventually timeout-ms #(= 200 (:status %)) #(it/post! base path body k)))

(defn- outage
  "An ex-info as the Cassandra backend throws for an outage."
  []
  (ex-info "cassandra: a request failed: no node" {:type :herald.feed.store.cassandra/unavailable}))

(deftest ^:integration retries-after-a-failure-past-the-append-make-one-post
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-idem-kafka-")
          sys (u/start-feed! nil {:events (et/kafka-events bootstrap (str "t" (random-uuid) "-") dir)})
          base (feed/url sys)
          [a b] (it/setup! base)
          path (str (it/link a) "/outbound")
          fail (atom #{})
          real-put @#'herald.feed.store.feeds/put-outbound!
          real-send @#'herald.feed.events.kafka/send!]
      (try
        (with-redefs [herald.feed.store.feeds/put-outbound! (fn [s p] (when (@fail :put) (throw (outage))) (real-put s p))
                      herald.feed.events.kafka/send! (fn [p topic k v t]
                                                       (when (and (@fail :send) (re-find #"posts$" topic)) (throw (outage)))
                                                       (real-send p topic k v t))]
          (testing "the same key twice: the same answer"
            (let [r (it/post! base path {:subject "twice" :story "kafka ibex"} "k-1")]
              (is (= 200 (:status r)))
              (is (= r (it/post! base path {:subject "twice" :story "kafka ibex"} "k-1")))
              (is (= 422 (:status (it/post! base path {:subject "twice" :story "kafka other"} "k-1"))))))
          (testing "the author's copy fails after the acknowledged append: a 503 saying so, then the retry's 200"
            (reset! fail #{:put})
            (is (maybe-recorded? (it/post! base path {:subject "after-ack" :story "kafka lemur"} "k-2")))
            (reset! fail #{})
            (is (= 200 (:status (retry-until-ok base path {:subject "after-ack" :story "kafka lemur"} "k-2" 30000)))))
          (testing "the append itself fails: the retry appends the reserved post"
            (reset! fail #{:send})
            (is (maybe-recorded? (it/post! base path {:subject "no-append" :story "kafka tapir"} "k-3")))
            (reset! fail #{})
            (let [r (it/post! base path {:subject "no-append" :story "kafka tapir"} "k-3")]
              (is (= 200 (:status r)))
              (is (= r (it/post! base path {:subject "no-append" :story "kafka tapir"} "k-3")))))
          (testing "concurrent repeats"
            (let [rs (mapv deref (mapv (fn [_] (future (it/post! base path {:subject "race" :story "kafka yak"} "k-4"))) (range 8)))]
              (is (every? #(= 200 (:status %)) rs))
              (is (= 1 (count (set (map #(get-in % [:json "id"]) rs)))))))
          (doseq [[subject word] [["twice" "ibex"] ["after-ack" "lemur"] ["no-append" "tapir"] ["race" "yak"]]]
            (is (= {:outbound 1 :inbound 1 :search 1} (it/copies sys a b subject word)) subject)))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))

(deftest ^:integration a-cassandra-outage-after-the-append-on-every-real-server
  (scale/with-servers "idem"
    (fn [roles]
      (let [cp (first (get-in roles [:feeds :contact-points]))
            {:keys [cut! restore! stop! port]} (proxy/start! (Long/parseLong (re-find #"\d+$" cp)))
            sys (scale/start-feed! (assoc-in roles [:feeds :contact-points] [(str "127.0.0.1:" port)]) "idem")
            base (feed/url sys)
            [a b] (it/setup! base)
            path (str (it/link a) "/outbound")
            body {:subject "outage" :story "cassandra quokka"}]
        (try
          ;; a first post warms the participant and friend lookups (the graph and cache roles are not cut)
          (is (= 200 (:status (it/post! base path {:subject "warm" :story "warm"} nil))))
          (cut!)
          (let [r (it/post! base path body "k-cut")]
            (is (maybe-recorded? r) (pr-str r)))
          (restore!)
          (let [r (retry-until-ok base path body "k-cut" 120000)]
            (is (= 200 (:status r)))
            (is (= r (it/post! base path body "k-cut")) "and again: the same answer")
            (is (= {:outbound 1 :inbound 1 :search 1}
                   (u/eventually 60000 #(= 1 (:search %)) #(it/copies sys a b "outage" "quokka")))))
          (finally (feed/stop! sys) (stop!)))))))
