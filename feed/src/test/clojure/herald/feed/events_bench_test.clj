(ns herald.feed.events-bench-test
  "^:benchmark Publish latency and fan-out / search lag on the Kafka log (one instance, memory store, the test broker in this JVM): posts at a fixed rate, each timed from its acknowledgement to its first sight in the friend's inbound feed and in search. Run by hand: mvn -o -q -pl feed test -Dherald.test.include=benchmark -Dherald.test.ns='herald\\.feed\\.events-bench-test'"
  (:require [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.service :as svc]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.test-util :as u])
  (:import (java.util Map)
           (java.util.concurrent ConcurrentHashMap)))

(set! *warn-on-reflection* true)

(defn- pct [xs p] (let [v (vec (sort xs))] (nth v (min (dec (count v)) (int (* p (count v)))))))

(defn- poll!
  "Until `stop` is set: every 5 ms, the first time each post is in `b`'s inbound feed (seen) and, by the search
  count (one sender, one partition: indexed in publish order), in search (sseen)."
  [ctx b ^Map seen ^Map sseen order stop]
  (future (loop []
            (when-not @stop
              (let [now (System/nanoTime)
                    o @order]
                (doseq [p (:items (svc/inbound ctx b {:limit 1000}))] (.putIfAbsent seen (:id p) now))
                (doseq [i (range (min (count (svc/search ctx "lagtest" 1000)) (count o)))] (.putIfAbsent sseen (o i) now)))
              (Thread/sleep 5)
              (recur)))))

(deftest ^:benchmark kafka-lag
  (sk/with-broker bootstrap
    (let [dir (u/temp-dir "lag-")
          sys (u/start-feed! nil {:events {:type :kafka :bootstrap-servers bootstrap :partitions 4 :data-dir dir
                                           :topic-prefix (str "lag" (random-uuid) "-")}})
          ctx (feed/service sys)
          a (:id (svc/create-participant! ctx {:name "a"})) b (:id (svc/create-participant! ctx {:name "b"}))
          n 400 rate 40
          acked (ConcurrentHashMap.) seen (ConcurrentHashMap.) sseen (ConcurrentHashMap.)
          order (atom []) pub-us (atom []) stop (atom false)]
      (try
        (svc/befriend! ctx a {:to (svc/link b)})
        (svc/publish! ctx a {:subject "warm" :story "up"})
        (Thread/sleep 3000)
        (let [poller (poll! ctx b seen sseen order stop)]
          (dotimes [i n]
            (let [t0 (System/nanoTime) p (svc/publish! ctx a {:subject (str "lagtest " i) :story "x"}) t1 (System/nanoTime)]
              (.put acked (:id p) t1) (swap! order conj (:id p)) (swap! pub-us conj (/ (- t1 t0) 1000.0))
              (Thread/sleep (max 0 (- (quot 1000 rate) (quot (- (System/nanoTime) t0) 1000000))))))
          (is (feed/await-fanout sys 60000))
          (Thread/sleep 500) (reset! stop true) @poller)
        (let [lag (fn [^Map m] (for [[id t] acked :let [s (.get m id)] :when s] (/ (- (long s) (long t)) 1e6)))
              fl (lag seen) sl (lag sseen)]
          (is (= n (count fl) (count sl)))
          (println (format "kafka_lag posts=%d rate=%d/s publish_us p50=%.0f p99=%.0f fanout_lag_ms p50=%.1f p99=%.1f search_lag_ms p50=%.1f p99=%.1f"
                           n rate (pct @pub-us 0.5) (pct @pub-us 0.99) (pct fl 0.5) (pct fl 0.99) (pct sl 0.5) (pct sl 0.99))))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))
