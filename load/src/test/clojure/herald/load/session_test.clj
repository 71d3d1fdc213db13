(ns herald.load.session-test
  "SessionClient against a real loopback server: a request given a not-before time is written then, not before,
  and its latency counts from that write."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.load.impl.request :as request]
            [herald.load.test-server :as ts])
  (:import (herald.load.client Response SessionClient Target Transport)
           (io.netty.channel EventLoopGroup)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(deftest ^:integration a-request-waits-on-the-event-loop-for-its-time
  (let [arrived (atom [])]
    (ts/with-server [s (fn [ex] (swap! arrived conj (System/nanoTime)) (ts/respond! ex 200 "{}")) 2]
      (let [^EventLoopGroup group (Transport/group 1)
            session (SessionClient. (.next group) (Target/http1 "127.0.0.1" (int (:port s)) 5000) false
                                    (.toNanos TimeUnit/SECONDS 5))
            req (request/encode {:method :get :path "/"} (str "127.0.0.1:" (:port s)))]
        (try
          (testing "a time already past: sent at once"
            (let [^Response r (.get (.send session req false (- (System/nanoTime) 1000000)) 5 TimeUnit/SECONDS)]
              (is (= 200 (.status r)))))
          (testing "a time 300 ms ahead: the server sees it no earlier, and the latency leaves the wait out"
            (let [t0 (System/nanoTime)
                  at (+ t0 (.toNanos TimeUnit/MILLISECONDS 300))
                  ^Response r (.get (.send session req false at) 5 TimeUnit/SECONDS)]
              (is (= 200 (.status r)))
              (is (>= (long (last @arrived)) at) "written before its time")
              (is (>= (.sentNanos r) at) "the latency counts the wait")))
          (testing "a closed session fails what is still waiting, it does not reconnect"
            (let [f (.send session req false (+ (System/nanoTime) (.toNanos TimeUnit/MILLISECONDS 200)))
                  n (count @arrived)]
              (.close session)
              (is (thrown? java.util.concurrent.ExecutionException (.get f 5 TimeUnit/SECONDS)))
              (Thread/sleep 100)
              (is (= n (count @arrived)))))
          (finally
            (.close session)
            (.syncUninterruptibly (.shutdownGracefully group 0 200 TimeUnit/MILLISECONDS))))))))
