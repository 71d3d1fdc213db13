(ns herald.http.slow-client-test
  "A client that does not read: the server stops reading its requests once the responses queued for it pass
  :max-write-buffer-bytes, and resumes when they drain."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io BufferedInputStream OutputStream)
           (java.net InetSocketAddress Socket)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private response-bytes (* 256 1024))
(def ^:private requests 200)

(defn- connect-small-window
  "A raw connection whose receive buffer is small, so that the kernel holds few responses for it."
  [port]
  (let [s (doto (Socket.) (.setReceiveBufferSize 16384) (.setTcpNoDelay true))]
    (.connect s (InetSocketAddress. "127.0.0.1" (int port)) 5000)
    (.setSoTimeout s 10000)
    {:socket s :in (BufferedInputStream. (.getInputStream s) 65536) :out (.getOutputStream s)}))

(deftest ^:integration a-client-that-does-not-read-is-no-longer-read
  (doseq [mode [:virtual-threads :worker-pool :event-loop]]
    (testing (str mode)
      (let [calls (atom 0)
            body (byte-array response-bytes (byte 120))]
        (with-server [s (fn [_] (swap! calls inc) {:status 200 :body body}) {:mode mode}]
          (let [c (connect-small-window (ts/port s))]
            (try
              (.write ^OutputStream (:out c)
                      (.getBytes ^String (apply str (repeat requests "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
                                 StandardCharsets/US_ASCII))
              (.flush ^OutputStream (:out c))
              (Thread/sleep 1500)
              ;; unbounded, the server would hold 200 x 256 KiB = 50 MiB for this client (and does with a 1 GiB
              ;; mark); the kernel's socket buffers (up to 4 MiB here), the 64 KiB mark and at most one batch of
              ;; :max-pipelined (16) requests already handed to a thread hold ~14-17 responses
              (let [handled @calls]
                (is (< handled 40) (str "with nobody reading, the server stopped after " handled " of " requests)))
              (let [answers (doall (repeatedly requests #(ts/read-response c)))]
                (is (every? #(and (= 200 (:status %)) (= response-bytes (count (:bytes %)))) answers)
                    "once the client reads, every response arrives")
                (is (= requests @calls)))
              (finally (ts/close! c)))))))))

(deftest ^:integration a-client-that-reads-nothing-for-the-idle-timeout-is-closed
  (let [body (byte-array response-bytes (byte 120))]
    (with-server [s (fn [_] {:status 200 :body body}) {:idle-timeout-ms 400}]
      (let [c (connect-small-window (ts/port s))]
        (try
          (.write ^OutputStream (:out c)
                  (.getBytes ^String (apply str (repeat 50 "GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
                             StandardCharsets/US_ASCII))
          (.flush ^OutputStream (:out c))
          (Thread/sleep 200)
          (is (= 1 (:connections (http/server-stats s))) "held while it might still read")
          (Thread/sleep 1500)
          (is (= 0 (:connections (http/server-stats s)))
              "closed: queued responses unread for the idle timeout are not a request in flight")
          (finally (ts/close! c)))))))
