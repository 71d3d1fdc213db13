(ns herald.flow.kafka-restart-test
  "A broker restart under a running Kafka Streams job: the job rides it out and every segment reaches its plugin output. Runs its own single-node KRaft broker (the shared one stays up for the other tests)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-output-test :as kot]
            [herald.flow.kafka-support :as ks])
  (:import (kafka.server KafkaConfig KafkaRaftServer)
           (org.apache.kafka.common.utils Time)))

(set! *warn-on-reflection* true)

(defn- ids [a] (set (map :id @a)))

(defn- wait-until [pred ^long ms]
  (let [deadline (+ (System/currentTimeMillis) ms)]
    (loop [] (cond (pred) true (> (System/currentTimeMillis) deadline) false :else (do (Thread/sleep 50) (recur))))))

(defn- start-server ^KafkaRaftServer [props]
  (doto (KafkaRaftServer. (KafkaConfig/fromProps props) Time/SYSTEM) (.startup)))

(defn- stop-server! [^KafkaRaftServer s]
  (.shutdown s)
  (.awaitShutdown s))

(defn- reachable?
  "Whether the broker at `bootstrap` answers a topic listing within about a second."
  [bootstrap]
  (with-open [a (org.apache.kafka.clients.admin.Admin/create
                 (doto (java.util.Properties.) (.putAll {"bootstrap.servers" bootstrap "request.timeout.ms" "800"
                                                         "default.api.timeout.ms" "1000"})))]
    (try (.get (.names (.listTopics a)) 2 java.util.concurrent.TimeUnit/SECONDS) true
         (catch Exception _ false))))

(deftest ^:integration a-broker-restart-loses-nothing
  (kb/with-broker _shared
    ;; a broker of its own, started the way the shared one is (fresh data dir, free ports), restarted on the
    ;; same ports and data dir
    (let [{:keys [bootstrap ^KafkaRaftServer server dir]} (#'kb/start!)
          props (with-open [r (clojure.java.io/reader (clojure.java.io/file dir "server.properties"))]
                  (doto (java.util.Properties.) (.load r)))
          server (volatile! server)
          app (ks/fresh-prefix) topics {:in (str app ".in")} durable (atom [])
          produce! (fn [from to] (kb/produce! bootstrap (:in topics) (for [i (range from to)] {:id i})))
          n 3000]
      (try
        (kb/create-topics! bootstrap (vals topics) 2)
        (reset! kot/crash-after nil)
        (produce! 0 1000)
        (let [h (flow/submit-job kot/job (-> (ks/kafka-opts bootstrap app topics {:processing-guarantee :at-least-once})
                                             (assoc :checkpoint-interval-ms 200)
                                             (assoc-in [:inject :out] {:sink/durable durable :task/batch-size 20})))]
          (try
            (is (wait-until #(>= (count (ids durable)) 500) 60000))
            (testing "the broker goes down for a few seconds and comes back on the same port and data"
              (stop-server! @server)
              (is (not (reachable? bootstrap)) "the broker is really down")
              (Thread/sleep 2000)
              (vreset! server (start-server props)))
            (produce! 1000 n)
            (is (true? (flow/await-caught-up h 120000)))
            (is (= (set (range n)) (ids durable)) "every segment written, none lost across the restart")
            (is (nil? (flow/await-job h 10)) "the job kept running")
            (finally (flow/kill-job h))))
        (finally (try (stop-server! @server) (catch Throwable _ nil)))))))
