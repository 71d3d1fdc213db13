(ns herald.feed.events.ids-test
  "Post ids from leased blocks: unique across allocators and threads, also over a real Kafka ids topic shared by two producers (two feed instances)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.events.ids :as ids]
            [herald.feed.events.kafka :as kafka]
            [herald.flow.kafka-broker :as sk])
  (:import (org.apache.kafka.clients.producer KafkaProducer)))

(set! *warn-on-reflection* true)

(defn- take-ids
  "Ids taken by `threads` threads, `n` each, from allocator `a`."
  [a threads n]
  (let [fs (doall (for [_ (range threads)] (future (vec (repeatedly n #(ids/next-id! a))))))]
    (into [] (mapcat deref) fs)))

(deftest ids-are-unique-positive-and-name-their-block
  (let [blocks (atom -1)
        lease! #(swap! blocks inc)
        a (ids/allocator lease!) b (ids/allocator lease!)
        xs (concat (take-ids a 4 5000) (take-ids b 4 5000))]
    (is (= 40000 (count (set xs))) "no id twice, two allocators over one block source")
    (is (every? pos? xs))
    (is (= #{0 1} (set (map ids/block-of xs))) "each allocator used its own block")
    (is (= (ids/id 7 3) (+ (* 8 (bit-shift-left 1 ids/block-bits)) 3)))
    (is (= 7 (ids/block-of (ids/id 7 12345))))
    (is (pos? (ids/id ids/max-block (dec (bit-shift-left 1 ids/block-bits)))) "the last id of the last block is positive"))
  (testing "a used-up block leases the next one"
    (let [blocks (atom -1)
          a (ids/allocator #(swap! blocks inc))
          n (bit-shift-left 1 ids/block-bits)
          xs (vec (repeatedly (+ n 2) #(ids/next-id! a)))]
      (is (= (+ n 2) (count (set xs))))
      (is (= [0 1] [(ids/block-of (first xs)) (ids/block-of (peek xs))]))))
  (testing "a failing lease throws and consumes nothing"
    (let [fail? (atom true)
          a (ids/allocator #(if @fail? (throw (ex-info "down" {:type :herald.feed/unavailable})) 5))]
      (is (thrown? clojure.lang.ExceptionInfo (ids/next-id! a)))
      (reset! fail? false)
      (is (= (ids/id 5 0) (ids/next-id! a))))))

(deftest instances-never-collide-on-one-kafka
  (sk/with-broker bootstrap
    (let [o (kafka/check {:bootstrap-servers bootstrap :topic-prefix (str "ids-" (random-uuid) "-") :partitions 2})
          _ (kafka/ensure-topics! o)
          _ (kafka/ensure-topics! o) ; an existing topic is left as it is
          ^KafkaProducer p1 (kafka/producer o) ^KafkaProducer p2 (kafka/producer o)]
      (try
        ;; four "instances" (two per producer, as after a restart): each leases its own blocks
        (let [as (for [p [p1 p1 p2 p2]] (ids/allocator #(kafka/lease-block! p o)))
              xs (into [] (mapcat deref) (doall (for [a as] (future (take-ids a 2 2000)))))]
          (is (= 16000 (count xs)))
          (is (= 16000 (count (set xs))) "no post id twice")
          (is (= 4 (count (set (map ids/block-of xs)))) "one block per instance"))
        (finally (.close p1) (.close p2))))))
