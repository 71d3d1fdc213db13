(ns herald.feed.events.dead-letter-writer-test
  "The dead letters' writer on its own, against a broker address where nothing listens (a real fault: the producer
  never gets the topic's metadata): a send keeps its own bound whatever the user set for the posts' producer, and
  the writer says it is failing, whatever the dead letter."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.events.dead-letter :as dead-letter])
  (:import (clojure.lang ExceptionInfo)
           (java.net ServerSocket)))

(set! *warn-on-reflection* true)

(defn- closed-port
  "A port of 127.0.0.1 nothing listens on (bound, then closed)."
  ^long []
  (with-open [s (ServerSocket. 0)] (.getLocalPort s)))

(deftest a-dead-letter-send-keeps-its-bound-whatever-the-posts-producer-allows
  (let [o {:bootstrap-servers (str "127.0.0.1:" (closed-port)) :linger-ms 1 :send-timeout-ms 400
           ;; the user's settings for the posts' producer: a minute of blocking per send
           :producer {"max.block.ms" "60000" "delivery.timeout.ms" "120000" "request.timeout.ms" "30000"}}
        p (dead-letter/lazy-producer #(dead-letter/producer o))
        w (dead-letter/writer (:get p) "herald-test-posts-dead-letter" (dead-letter/timeout-ms o))]
    (try
      (is (not (dead-letter/failing? w)) "no send yet")
      (let [t0 (System/nanoTime)
            e (try ((:dead-letter! w) :feed-index {:task :index :segment {:post {:id 7}}
                                                    :exception (ex-info "store refuses it" {})})
                   nil
                   (catch ExceptionInfo e e))
            ms (quot (- (System/nanoTime) t0) 1000000)]
        (is (= :herald.feed/unavailable (:type (ex-data e))) (pr-str e))
        (is (< ms 5000) (str "one attempt within the dead letters' bound (400 ms here), not the posts' 60 s: " ms " ms"))
        (is (dead-letter/failing? w) "a store write's dead letter that cannot be written: failing")
        (is (not (dead-letter/failing? w (+ (System/currentTimeMillis) 31000)))
            "a failure no attempt followed for 30 s belongs to a record no longer retried")
        (is (= {} (dead-letter/count-map (:counts w))) "nothing counted as written"))
      (finally ((:close! p) 100)))))
