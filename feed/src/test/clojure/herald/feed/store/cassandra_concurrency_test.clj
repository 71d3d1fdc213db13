(ns herald.feed.store.cassandra-concurrency-test
  "The Cassandra :feeds backend under concurrency: two instances (node ids 1 and 2) on one keyspace publish and
  fan out in parallel, fan-outs repeated from other threads; then no post is lost or duplicated anywhere."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.servers.cassandra :as node]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.cassandra :as cassandra]
            [herald.feed.store.cassandra-test :refer [feeds-config]]
            [herald.feed.store.contract :refer [post-of all-pages]]
            [herald.feed.store.scale.spi :as spi]))

(set! *warn-on-reflection* true)

(def ^:private senders [1 2 3 4 5])
(def ^:private recipients [10 11 12])

(defn- publish-and-fan-out!
  "n posts from random senders through f, each fanned out at once; returns them in publish order."
  [f n]
  (vec (for [i (range n)]
         (let [p (feeds/publish! f (post-of (rand-nth senders) (str "story " i)) recipients)]
           (feeds/fan-out! f p recipients)
           p))))

(def ^:private newest-first #(compare ((juxt :ts :id) %2) ((juxt :ts :id) %1)))

(deftest parallel-publishes-and-deliveries-lose-and-duplicate-nothing
  (node/with-node [cp]
    (let [cfg (feeds-config cp)
          a (cassandra/open (assoc cfg :node-id 1))
          b (cassandra/open (assoc cfg :node-id 2))]
      (try
        (let [per-thread (->> (for [f [a b] _ (range 3)] (future (publish-and-fan-out! f 12)))
                              doall (mapv deref))
              posts (vec (apply concat per-thread))
              by-id (group-by :id posts)]
          (testing "ids are unique across both instances; :ts increases per thread"
            (is (= 72 (count by-id)))
            (is (every? #(apply < (map :ts %)) per-thread)))
          (testing "a second fan-out of every post, racing from other threads, changes nothing"
            (run! deref (doall (for [part (partition-all 18 (shuffle posts))]
                                 (future (doseq [p part] (feeds/fan-out! (rand-nth [a b]) p recipients)))))))
          (doseq [f [a b]]
            (doseq [r recipients]
              (let [[items pages] (all-pages #(feeds/inbound f r %) 7)]
                (is (= (sort newest-first posts) items) (str "inbound of " r ": every post once, newest first"))
                (is (= 11 pages))))
            (doseq [sender senders]
              (is (= (sort newest-first (filter #(= sender (:from %)) posts))
                     (first (all-pages #(feeds/outbound f sender %) 5)))
                  (str "outbound of " sender)))
            (is (empty? (feeds/pending-fanouts f)))
            (is (= (sort-by (juxt :ts :id) posts) (spi/-posts-after f 0 1000)) "the post log holds each post once")
            (is (= (first (by-id (:id (first posts)))) (feeds/post f (:id (first posts)))))))
        (finally (s/close-store! a) (s/close-store! b))))))

(deftest concurrent-publishes-without-fan-out-stay-pending
  (node/with-node [cp]
    (let [f (cassandra/open (feeds-config cp :fanout-concurrency 3))]
      (try
        (let [posts (->> (for [t (range 4)] (future (vec (for [i (range 10)] (feeds/publish! f (post-of (inc t) (str i)) [99])))))
                         doall (mapcat deref) vec)]
          (is (= (sort-by :ts posts) (map :post (feeds/pending-fanouts f))) "every publish is pending, oldest first (read 3 at a time)")
          (is (= 40 (:pending-fanouts (s/stats f))))
          (run! deref (doall (for [part (partition-all 10 posts)] (future (doseq [p part] (feeds/complete-fanout! f (:id p)))))))
          (is (empty? (feeds/pending-fanouts f)))
          (is (= 0 (:pending-fanouts (s/stats f))))
          (is (= {:items [] :next nil} (feeds/inbound f 99)) "completing without delivering delivers nothing"))
        (finally (s/close-store! f))))))
