(ns herald.http.streamed-body-test
  "Request bodies streamed to the handler as they arrive, over real sockets: a 1 GiB upload with bounded heap and
  direct memory, backpressure on HTTP/1.1 (the client's writes block) and HTTP/2 (the client is not given window),
  413 as soon as a chunked body passes :max-body-bytes, keep-alive after a streamed body, every execution mode."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (io.netty.util.internal PlatformDependent)
           (java.io InputStream OutputStream)
           (java.lang.management BufferPoolMXBean ManagementFactory)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent CountDownLatch TimeUnit)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private MiB (* 1024 1024))

(defn- counting-handler
  "Reads the body in 64 KiB reads, adding to `progress`; `gate` (a latch) is awaited after the first read."
  ([progress] (counting-handler progress nil))
  ([^AtomicLong progress ^CountDownLatch gate]
   (fn [req]
     (let [^InputStream in (:body req)
           buf (byte-array 65536)]
       (loop [first? true]
         (let [n (.read in buf)]
           (when (and first? gate) (.await gate 30 TimeUnit/SECONDS))
           (when (pos? n) (.addAndGet progress n) (recur false))))
       {:status 200 :headers {"content-type" "text/plain"} :body (str (.get progress))}))))

(defn- write-body!
  "Writes `total` bytes to `out` in 64 KiB writes, counting them in `written`; returns a future (true when all
  were written, or the exception)."
  [^OutputStream out ^long total ^AtomicLong written]
  (future
    (try (let [buf (byte-array 65536 (byte 7))]
           (loop [left total]
             (when (pos? left)
               (let [n (int (min left 65536))]
                 (.write out buf 0 n)
                 (.addAndGet written n)
                 (recur (- left n)))))
           (.flush out)
           true)
         (catch Exception e e))))

(defn- heap-used ^long []
  (System/gc)
  (Thread/sleep 100)
  (System/gc)
  (.getUsed (.getHeapMemoryUsage (ManagementFactory/getMemoryMXBean))))

(defn- direct-used
  "[JDK direct buffer pool bytes, Netty's own direct counter (-1 when it does not count)]."
  []
  [(reduce + (for [^BufferPoolMXBean b (ManagementFactory/getPlatformMXBeans BufferPoolMXBean)
                   :when (= "direct" (.getName b))]
               (.getMemoryUsed b)))
   (PlatformDependent/usedDirectMemory)])

(deftest ^:integration one-gib-upload-keeps-memory-bounded
  (let [total (* 1024 MiB)
        progress (AtomicLong.)]
    (with-server [s (counting-handler progress) {:max-body-bytes (- Integer/MAX_VALUE 8)}]
      (let [heap0 (heap-used)
            [jdk0 netty0] (direct-used)
            c (ts/open (ts/port s) 60000)
            written (AtomicLong.)]
        (try
          (ts/write! c (str "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: " total "\r\n\r\n"))
          (let [w (write-body! (:out c) total written)]
            (loop [] (when (and (< (.get progress) (* 512 MiB)) (not (realized? w))) (Thread/sleep 20) (recur)))
            (let [heap (- (heap-used) heap0)
                  [jdk netty] (direct-used)]
              (println "1 GiB upload at" (quot (.get progress) MiB) "MiB consumed: heap retained" (quot heap 1024)
                       "KiB, JDK direct" (quot (- (long jdk) (long jdk0)) 1024) "KiB, Netty direct"
                       (quot (- (long netty) (long netty0)) 1024) "KiB")
              (is (< heap (* 64 MiB)) "half the body consumed: the heap holds far less than it (after GC)")
              (is (< (- (long jdk) (long jdk0)) (* 64 MiB)))
              (is (< (- (long netty) (long netty0)) (* 64 MiB))))
            (is (true? @w))
            (let [r (ts/read-response c)]
              (is (= 200 (:status r)))
              (is (= (str total) (:body r)))))
          (finally (ts/close! c)))))))

(deftest ^:integration slow-handler-blocks-the-client-http1
  (doseq [mode [:virtual-threads :worker-pool :event-loop]]
    (testing mode
      (let [total (* 64 MiB)
            progress (AtomicLong.)
            gate (CountDownLatch. 1)]
        (with-server [s (counting-handler progress gate) {:mode mode :max-body-bytes total}]
          (let [c (ts/open (ts/port s) 30000)
                written (AtomicLong.)]
            (try
              (ts/write! c (str "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: " total "\r\n\r\n"))
              (let [w (write-body! (:out c) total written)]
                (Thread/sleep 1500)
                (let [w1 (.get written)]
                  (Thread/sleep 1000)
                  (let [w2 (.get written)]
                    (println mode "handler stalled: client wrote" (quot w1 1024) "KiB, then" (quot w2 1024) "KiB of"
                             (quot total 1024))
                    (is (= w1 w2) "the client's writes are blocked while the handler does not read")
                    (is (< w2 (* 32 MiB)) "what was sent sits in socket buffers, not a whole body")))
                (.countDown gate)
                (is (true? (deref w 30000 :timeout)))
                (let [r (ts/read-response c)]
                  (is (= 200 (:status r)))
                  (is (= (str total) (:body r)))))
              (finally (.countDown gate) (ts/close! c)))))))))

(deftest ^:integration slow-handler-gives-no-window-http2
  (let [total (* 64 MiB)
        progress (AtomicLong.)
        gate (CountDownLatch. 1)
        f (ts/tls-files)
        pulled (AtomicLong.)]
    (with-server [s (counting-handler progress gate)
                  {:max-body-bytes total :tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}]
      (let [^HttpClient client (ts/https-client {:version :http2})
            body-in (fn [] (let [left (AtomicLong. total)]
                             (proxy [InputStream] []
                               (read
                                 ([] (if (pos? (.getAndDecrement left)) (do (.incrementAndGet pulled) 7) -1))
                                 ([^bytes b off len]
                                  (let [n (min (long len) (.get left))]
                                    (if (pos? n) (do (.addAndGet left (- n)) (.addAndGet pulled n) (int n)) -1)))))))
            req (-> (HttpRequest/newBuilder (URI. (str "https://127.0.0.1:" (ts/port s) "/up")))
                    (.POST (HttpRequest$BodyPublishers/fromPublisher (HttpRequest$BodyPublishers/ofInputStream
                                                                      (reify java.util.function.Supplier (get [_] (body-in))))
                                                                     total))
                    (.build))
            resp (.sendAsync client req (HttpResponse$BodyHandlers/ofString))]
        (try
          ;; the client sends until the server stops granting window: wait for its count to hold still for 1 s
          (let [deadline (+ (System/currentTimeMillis) 15000)
                settled (loop [prev -1]
                          (Thread/sleep 1000)
                          (let [p (.get pulled)]
                            (cond (and (pos? p) (= p prev)) p
                                  (> (System/currentTimeMillis) deadline) nil
                                  :else (recur p))))]
            (println "h2 handler stalled: the client's sending stopped at" (some-> settled (quot 1024)) "KiB of"
                     (quot total 1024))
            (is (some? settled) "no window, no more DATA: the client stops")
            (is (< (or settled total) (* 16 MiB))))
          (.countDown gate)
          (let [^HttpResponse r (.get resp 30 TimeUnit/SECONDS)]
            (is (= 200 (.statusCode r)))
            (is (= "HTTP_2" (str (.version r))))
            (is (= (str total) (.body r))))
          (finally (.countDown gate)))))))

(deftest chunked-body-over-the-limit-gets-413-at-once
  (let [progress (AtomicLong.)
        never (CountDownLatch. 1)
        handler (fn [req]
                  (let [^InputStream in (:body req) buf (byte-array 65536)]
                    (try (loop [] (let [n (.read in buf)] (when (pos? n) (.addAndGet progress n) (recur))))
                         (catch java.io.IOException _ (.await never 60 TimeUnit/SECONDS)))
                    {:status 200 :body "handler"}))]
    (with-server [s handler {:max-body-bytes MiB}]
      (let [c (ts/open (ts/port s))
            ^OutputStream out (:out c)]
        (try
          (ts/write! c "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
          (let [w (future (try (dotimes [_ 64]
                                 (.write out (.getBytes "10000\r\n" StandardCharsets/US_ASCII))
                                 (.write out (byte-array 65536))
                                 (.write out (.getBytes "\r\n" StandardCharsets/US_ASCII)))
                               (catch Exception _ nil)))
                t0 (System/nanoTime)
                r (ts/read-response c)]
            (is (= 413 (:status r)))
            (is (< (/ (- (System/nanoTime) t0) 1e9) 30.0) "answered while the handler still waits (60 s)")
            (is (<= (.get progress) MiB) "the handler never saw more than the limit")
            (is (ts/eof? c) "then the connection closes")
            (future-cancel w))
          (finally (.countDown never) (ts/close! c)))))))

(deftest streamed-bodies-keep-alive-and-modes
  (doseq [mode [:virtual-threads :worker-pool :event-loop]
          async? [false true]]
    (testing [mode async?]
      (let [h (fn [req] {:status 200 :body (str (count (some-> ^InputStream (:body req) .readAllBytes)))})
            handler (if async? (fn [req respond raise] (future (try (respond (h req)) (catch Throwable t (raise t))))) h)
            size (* 300 1024)
            body (apply str (repeat size "b"))]
        (with-server [s handler {:mode mode :async? async?}]
          (let [c (ts/open (ts/port s))]
            (try
              (dotimes [_ 2]
                (ts/write! c (ts/request-text "POST" "/p" {} body))
                (let [r (ts/read-response c)]
                  (is (= 200 (:status r)))
                  (is (= (str size) (:body r)))))
              (ts/write! c (ts/request-text "POST" "/p" {"Transfer-Encoding" "chunked"}
                                            (str (Integer/toHexString size) "\r\n" body "\r\n0\r\n\r\n")))
              (is (= (str size) (:body (ts/read-response c))) "chunked, past the buffered limit")
              (ts/write! c (ts/request-text "GET" "/after"))
              (is (= "0" (:body (ts/read-response c))) "the connection is still usable")
              (finally (ts/close! c)))))))))

(deftest handler-answering-before-the-body-ends
  (with-server [s (fn [_] {:status 401 :body "no"}) {}]
    (let [c (ts/open (ts/port s))
          total (* 2 MiB)]
      (try
        (ts/write! c (str "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: " total "\r\n\r\n"))
        (write-body! (:out c) total (AtomicLong.))
        (let [r (ts/read-response c)]
          (is (= 401 (:status r)))
          (is (= "close" (get-in r [:headers "connection"])) "the unread rest cannot be skipped cheaply: close"))
        (finally (ts/close! c))))))
