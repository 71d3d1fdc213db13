(ns herald.feed.events.receipts-test
  "Receipts of author copies (herald.feed.events.receipts): they ride on the next record of the partition; the
  fan-out job's output writes an author copy only when no receipt came by its flush (a post whose instance died
  after the acknowledgement still reaches its author's outbound feed); on a real broker, through the feed."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.events-test :as et]
            [herald.feed.events.kafka :as kafka]
            [herald.feed.events.receipts :as receipts]
            [herald.feed.jobs.derived :as derived]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.memory :as memory]
            [herald.feed.test-util :as u]
            [herald.flow.kafka-broker :as sk]
            [herald.flow.spi :as spi])
  (:import (herald.flow.log RecordCodec)
           (org.apache.kafka.clients.consumer ConsumerRecord KafkaConsumer)))

(set! *warn-on-reflection* true)

(defn- same-partition-key
  "A key other than `k` in the same partition of `n`."
  [k n]
  (first (filter #(and (not= % k) (= (kafka/partition-of % n) (kafka/partition-of k n))) (range 1 1000))))

(deftest a-receipt-rides-once-on-the-next-record-of-its-partition
  (let [r (receipts/receipts 4)
        k2 (same-partition-key 1 4)
        other (first (filter #(not= (kafka/partition-of % 4) (kafka/partition-of 1 4)) (range 1 1000)))]
    (receipts/note! r 1 101)
    (receipts/note! r 1 102)
    (is (= {:x 1} (receipts/attach r {:x 1} other)) "another partition's record carries none")
    (is (= {:x 1 :author-copies [101 102]} (receipts/attach r {:x 1} k2)) "any key of the partition")
    (is (= {:x 1} (receipts/attach r {:x 1} 1)) "taken once")
    (dotimes [i 100] (receipts/note! r 1 i))
    (is (= (vec (range receipts/max-per-partition)) (:author-copies (receipts/attach r {} 1))) "bounded")
    (is (= #{101 102 7} (receipts/written [{:author-copies [101]} {:post {}} {:author-copies [102 7]}])))))

(deftest the-fan-out-task-passes-receipts-on
  (let [p {:id 5 :from 1 :ts 10 :occurred "2026-11-26" :subject "s" :story "t"}]
    (is (= {:post p :recipients [2] :author-copies [3 4]} (posts/fan-out {:post p :recipients [1 2] :author-copies [3 4]})))
    (is (= {:delete p :author-copies [3]} (posts/fan-out {:delete p :author-copies [3]})))
    (is (= {:post p :recipients [2]} (posts/fan-out {:post p :recipients [2] :author-copies "junk"})) "a malformed list says nothing")))

(defn- post [id from] {:id id :from from :ts (* 1000 id) :occurred "2026-11-26" :subject (str "s" id) :story "a story"})

(defn- outbound-ids [s from] (mapv :id (:items (feeds/outbound s from))))

(deftest the-output-writes-an-author-copy-only-when-no-receipt-came-by-its-flush
  (let [s (memory/memory-store)
        out (derived/feeds-output {:task/name :inbound :feeds/store s})]
    (testing "no receipt: the inbound copy at once, the author copy by the flush (before the offsets pass it)"
      (spi/-write! out [{:post (post 1 10) :recipients [20]}])
      (is (= [1] (mapv :id (:items (feeds/inbound s 20)))))
      (is (= [] (outbound-ids s 10)))
      (spi/-flush! out)
      (is (= [1] (outbound-ids s 10))))
    (testing "a receipt in the same batch, or in a later one before the flush: the job leaves the copy alone"
      ;; post 2's copy was never written here: the receipt claims it was, so its absence shows the job skipped it
      (spi/-write! out [{:post (post 2 10) :recipients [20]} {:post (post 3 10) :recipients [20] :author-copies [2]}])
      (spi/-write! out [{:post (post 4 11) :recipients [20] :author-copies [3]}])
      (spi/-flush! out)
      (is (= [4] (outbound-ids s 11)))
      (is (= [1] (outbound-ids s 10)) "2 and 3 had receipts")
      (is (= [4 3 2 1] (mapv :id (:items (feeds/inbound s 20))))))
    (testing "an owed copy of a post deleted before the flush stays deleted"
      (spi/-write! out [{:post (post 5 12) :recipients [20]}])
      (spi/-write! out [{:delete (post 5 12)}])
      (spi/-flush! out)
      (is (= [] (outbound-ids s 12)))
      (is (nil? (feeds/post s 5))))))

(defn- posts-records
  "The decoded records of `topic` (the first `n`, or what came within 20 s)."
  [bootstrap topic n]
  (with-open [c (kafka/consumer {:bootstrap-servers bootstrap} (str "read-" (random-uuid)))]
    (let [^java.util.Collection topics [topic]] (.subscribe c topics))
    (let [deadline (+ (System/currentTimeMillis) 20000)]
      (loop [got []]
        (if (or (>= (count got) (long n)) (> (System/currentTimeMillis) deadline))
          got
          (recur (into got (map #(RecordCodec/decode ^bytes (.value ^ConsumerRecord %)))
                       (.poll c (java.time.Duration/ofMillis 200)))))))))

(deftest ^:integration receipts-through-the-feed-on-a-real-broker
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "feed-receipts-")
          events (et/kafka-events bootstrap (str "r" (random-uuid) "-") dir)
          sys (u/start-feed! nil {:events events})
          base (feed/url sys)
          req (fn [& args] (apply u/request base args))
          id #(get-in (req "/participant" :method :post :json {:name %}) [:json "id"])
          link #(str "/participant/" %)]
      (try
        (let [a (id "Ann") b (id "Bob")
              publish! #(get-in (req (str (link a) "/outbound") :method :post :json {:subject % :story "receipts"}) [:json "id"])]
          (req (str (link a) "/friends") :method :post :json {:to (link b)})
          (let [p1 (publish! "first") _ (publish! "second")
                topic (kafka/posts-topic events)
                recs (posts-records bootstrap topic 2)]
            (is (= [nil [p1]] (mapv :author-copies recs)) "the second post of the sender carries the first one's receipt")
            (testing "a record appended with no author copy written (its instance killed after the acknowledgement)"
              (let [ghost (assoc (post 777 a) :id 7777777 :subject "ghost" :ts (* 1000 (System/currentTimeMillis)))]
                (with-open [p (kafka/producer (kafka/check (dissoc events :type)))]
                  (kafka/send! p topic a (kafka/record-bytes {:post ghost :recipients [b]}) 10000))
                (is (true? (feed/await-fanout sys 60000)))
                (is (= ["ghost" "second" "first"] (mapv #(get % "subject") (:json (req (str (link a) "/outbound")))))
                    "the job wrote the author copy")
                (is (= ["ghost" "second" "first"] (mapv #(get % "subject") (:json (req (str (link b) "/inbound")))))))))
          (is (true? (feed/await-fanout sys 60000))))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))
