(ns herald.http.large-body-test
  "Large byte[] and String bodies to clients that read slowly: each connection holds about a chunk of its
  response in direct memory, not the whole response (QA Q23: 80 slow readers of a 10 MB page exhausted it)."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (io.netty.buffer PooledByteBufAllocator)
           (java.io BufferedInputStream OutputStream)
           (java.net InetSocketAddress Socket)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private body-bytes (* 4 1024 1024))
(def ^:private clients 12)

(defn- direct-used ^long [] (.usedDirectMemory (.metric PooledByteBufAllocator/DEFAULT)))

(defn- connect-small-window [port]
  (let [s (doto (Socket.) (.setReceiveBufferSize 16384))]
    (.connect s (InetSocketAddress. "127.0.0.1" (int port)) 5000)
    (.setSoTimeout s 20000)
    {:socket s :in (BufferedInputStream. (.getInputStream s) 65536) :out (.getOutputStream s)}))

(deftest ^:integration slow-readers-of-large-bodies-hold-little-direct-memory
  (doseq [[kind body] [[:bytes (byte-array body-bytes (byte 120))]
                       [:string (apply str (repeat body-bytes "y"))]]
          mode [:virtual-threads :event-loop]]
    (testing (str kind " " mode)
      (with-server [s (fn [_] {:status 200 :headers {"content-type" "text/plain"} :body body}) {:mode mode}]
        (let [before (direct-used)
              conns (vec (repeatedly clients #(connect-small-window (ts/port s))))]
          (try
            (doseq [{:keys [^OutputStream out]} conns]
              (.write out (.getBytes "GET / HTTP/1.1\r\nHost: x\r\n\r\n" StandardCharsets/US_ASCII))
              (.flush out))
            (Thread/sleep 1500)
            ;; whole copies would be 12 x 4 MiB = 48 MiB; paced, each connection holds about the kernel's
            ;; socket buffer plus a 64 KiB chunk (pool chunks make the figure coarse: allow 24 MiB)
            (let [held (- (direct-used) before)]
              (is (< held (* 24 1024 1024)) (str "direct memory held for " clients " slow readers: " held " bytes")))
            (doseq [c conns]
              (let [r (ts/read-response c)]
                (is (= 200 (:status r)))
                (is (= (str body-bytes) (get-in r [:headers "content-length"])) "the length is still declared")
                (is (= body-bytes (count (:bytes r))))))
            (finally (run! ts/close! conns))))))))
