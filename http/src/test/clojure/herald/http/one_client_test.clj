(ns herald.http.one-client-test
  "One client cannot take the server: a per-address connection limit, and a short timeout for connections that
  never send a complete request head; every such answer counted."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io BufferedInputStream)
           (java.net InetSocketAddress Socket)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- open-from
  "A raw connection to 127.0.0.1:port from the local address `from` (another loopback address is another client)."
  [from port]
  (let [s (doto (Socket.) (.bind (InetSocketAddress. ^String from 0)) (.connect (InetSocketAddress. "127.0.0.1" (int port)))
            (.setSoTimeout 3000))]
    {:socket s :in (BufferedInputStream. (.getInputStream s)) :out (.getOutputStream s)}))

(defn- get! [c uri]
  (ts/write! c (ts/request-text "GET" uri))
  (ts/read-response c))

(deftest ^:integration one-address-cannot-hold-every-connection
  (doseq [http2? [true false]]
    (testing (str ":http2? " http2?)
      (with-server [s (fn [req] {:status 200 :body (:uri req)}) {:max-connections-per-address 3 :http2? http2?}]
        (let [p (ts/port s)
              held (vec (repeatedly 3 #(open-from "127.0.0.1" p)))]
          (try
            (is (= ["/a" "/a" "/a"] (mapv #(:body (get! % "/a")) held)) "three connections from one address are served")
            (testing "a fourth from the same address: 503 naming the reason, then closed"
              (let [c (open-from "127.0.0.1" p)]
                (try (let [r (ts/read-response c)]
                       (is (= 503 (:status r)))
                       (is (str/includes? (:body r) "too many connections from your address"))
                       (is (= "close" (get-in r [:headers "connection"]))))
                     (is (ts/eof? c))
                     (finally (ts/close! c)))))
            (testing "another client (another address) is served, health probes included"
              (let [c (open-from "127.0.0.2" p)]
                (try (is (= "/health" (:body (get! c "/health"))))
                     (finally (ts/close! c)))))
            (testing "the held connections still work; closing one makes room again"
              (is (= "/b" (:body (get! (first held) "/b"))))
              (let [n0 (:connections (http/server-stats s))]
                (ts/close! (first held))
                ;; the server sees the close asynchronously: waited for, not a fixed 100 ms
                (is (ts/eventually #(< (:connections (http/server-stats s)) n0) 30000) "the close is seen"))
              (let [c (open-from "127.0.0.1" p)]
                (try (is (= "/c" (:body (get! c "/c"))))
                     (finally (ts/close! c)))))
            (is (= {503 1} (:errors (http/server-stats s))) "the refused connection is counted")
            (finally (run! ts/close! (rest held)))))))))

(deftest ^:integration connections-that-never-ask-are-closed-soon
  (doseq [http2? [true false]]
    (testing (str ":http2? " http2?)
      (with-server [s (fn [_] {:status 200 :body "ok"}) {:header-timeout-ms 300 :http2? http2?}]
        (let [p (ts/port s)]
          (testing "a silent connection is closed without an answer"
            (let [c (ts/open p)
                  t0 (System/nanoTime)]
              (try (is (ts/eof? c))
                   (is (< (- (System/nanoTime) t0) 15e9) "the header timeout (0.3 s), well before the request timeout (30 s)")
                   (finally (ts/close! c)))))
          (testing "half a head: 408, then closed"
            (let [c (ts/open p 3000)]
              (try (ts/write! c "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                   (is (= 408 (:status (ts/read-response c))))
                   (is (ts/eof? c))
                   (finally (ts/close! c)))))
          (testing "a connection that asked once is left to the idle timeout"
            (let [c (ts/open p 3000)]
              (try (is (= "ok" (:body (get! c "/"))))
                   (Thread/sleep 700)
                   (is (= "ok" (:body (get! c "/"))))
                   (finally (ts/close! c)))))
          (is (= {408 1} (:errors (http/server-stats s)))))))))

(deftest ^:integration new-options-are-validated
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #":max-connections-per-address"
                        (http/start-server (fn [_]) {:port 0 :max-connections-per-address 0})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #":header-timeout-ms"
                        (http/start-server (fn [_]) {:port 0 :header-timeout-ms -1}))))
