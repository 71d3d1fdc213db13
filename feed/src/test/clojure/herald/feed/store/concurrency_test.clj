(ns herald.feed.store.concurrency-test
  "Many threads befriending, posting and delivering at once: no lost friendship, no duplicate inbound item."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.fixtures :as fx])
  (:import (java.util.concurrent ConcurrentLinkedQueue CountDownLatch)))

(set! *warn-on-reflection* true)

(defn- in-threads
  "Runs (f i) on n threads released together; returns the results in thread order."
  [n f]
  (let [gate (CountDownLatch. 1)
        futs (mapv (fn [i] (future (.await gate) (f i))) (range n))]
    (.countDown gate)
    (mapv deref futs)))

(defn- befriend-race [st]
  (let [ids (mapv :id (repeatedly 30 #(graph/create-participant! st "p")))
        pairs (vec (distinct (for [_ (range 120)] (let [[a b] (take 2 (shuffle ids))] [(min a b) (max a b)]))))
        ;; threads 0-5 befriend; 6-7 read friend lists meanwhile, so the cache is filled during the race
        results (apply concat (in-threads 8 (fn [i]
                                              (if (< i 6)
                                                (doall (for [[a b] (shuffle pairs)]
                                                         (let [[x y] (shuffle [a b])]
                                                           (assoc (graph/befriend! st x y) :pair [a b]))))
                                                (do (dotimes [_ 400] (graph/friends st (rand-nth ids))) [])))))
        by-pair (group-by :pair results)]
    (is (= (count pairs) (count by-pair)))
    (is (every? #(= 1 (count (distinct (map :id %)))) (vals by-pair)) "one friendship id per pair")
    (is (every? #(= 1 (count (filter :created? %))) (vals by-pair)) "created exactly once")
    (is (= (count pairs) (count (distinct (map :id results)))) "distinct ids across pairs")
    (doseq [p ids]
      (let [fs (graph/friends st p)
            expected (set (for [[a b] pairs :when (#{a b} p)] (if (= a p) b a)))]
        (is (= expected (set (map :to fs))) "no lost friendship")
        (is (= (count fs) (count expected)) "no duplicate friendship")))))

(defn- publish-race [st]
  (let [[r1 r2 & senders] (mapv :id (repeatedly 6 #(graph/create-participant! st "p")))
        queue (ConcurrentLinkedQueue.)
        published (apply concat
                         (in-threads 4 (fn [i]
                                         (doall (for [n (range 150)]
                                                  (let [p (feeds/publish! st (post-of (nth senders i) (str "n" n)) [r1 r2])]
                                                    (.add queue p)
                                                    p))))))
        deliver (fn [_] (doseq [p (vec queue)] (feeds/fan-out! st p [r1 r2]) (feeds/deliver! st r1 p)))]
    (in-threads 3 deliver)
    (is (= 600 (count (distinct (map :id published)))))
    (is (= 600 (count (distinct (map :ts published)))) "timestamps unique under concurrency")
    (doseq [r [r1 r2]]
      (let [items (:items (feeds/inbound st r {:limit 10000}))]
        (is (= 600 (count items)) "every post delivered exactly once")
        (is (= (count items) (count (distinct (map :id items)))) "no duplicate inbound item")
        (is (apply > (map :ts items)) "newest first")))
    (is (empty? (feeds/pending-fanouts st)))
    (doseq [sender senders]
      (is (= 150 (count (:items (feeds/outbound st sender {:limit 1000}))))))))

(deftest memory-store-under-concurrency
  (let [st (s/open-store {:type :memory})]
    (testing "befriend" (befriend-race st))
    (testing "publish and deliver" (publish-race st))))

(deftest embedded-store-under-concurrency
  (let [st (fx/open-embedded)]
    (try
      (testing "befriend" (befriend-race st))
      (testing "publish and deliver" (publish-race st))
      (finally (fx/close-embedded! st)))))
