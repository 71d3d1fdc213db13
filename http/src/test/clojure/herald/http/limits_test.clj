(ns herald.http.limits-test
  "Limits: body size (413, Expect: 100-continue), backpressure (503), connection cap, deep pipelining."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io InputStream)
           (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(deftest ^:integration body-limit-and-expect-continue
  (with-server [s (fn [req] {:status 200 :body (str (count (slurp ^InputStream (:body req))))}) {:max-body-bytes 1000}]
    (let [p (ts/port s)]
      (is (= "1000" (:body (ts/request p (ts/request-text "POST" "/" {} (apply str (repeat 1000 "a"))))))
          "exactly the limit is fine")
      (is (= 413 (:status (ts/request p (ts/request-text "POST" "/" {} (apply str (repeat 1001 "a")))))))
      (testing "Expect: 100-continue within the limit gets 100 then the answer"
        (let [c (ts/open p)]
          (try (ts/write! c "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
               (is (= 100 (:status (ts/read-response c))))
               (ts/write! c "hello")
               (is (= "5" (:body (ts/read-response c))))
               (finally (ts/close! c)))))
      (testing "Expect: 100-continue over the limit gets 413 before the body is sent"
        (let [c (ts/open p)]
          (try (ts/write! c "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
               (is (= 413 (:status (ts/read-response c))))
               (finally (ts/close! c))))))))

(deftest ^:integration saturation-answers-503-fast
  (let [gate (CountDownLatch. 1)
        entered (CountDownLatch. 2)]
    (with-server [s (fn [_] (.countDown entered) (.await gate 60 TimeUnit/SECONDS) {:status 200 :body "done"})
                  {:max-pending 2}]
      (let [p (ts/port s)
            blocked (doall (for [_ (range 2)] (future (ts/GET p "/"))))]
        (is (.await entered 30 TimeUnit/SECONDS))
        (is (= 2 (:pending (http/server-stats s))))
        (let [t0 (System/nanoTime)
              r (ts/GET p "/")]
          (is (= 503 (:status r)))
          (is (= "1" ((:headers r) "retry-after")))
          (is (< (- (System/nanoTime) t0) 30e9) "answered without waiting for the gate (60 s)"))
        (is (= 1 (:rejected (http/server-stats s))) "the 503 is counted")
        (.countDown gate)
        (is (= ["done" "done"] (map (comp :body deref) blocked)))
        (is (= 200 (:status (ts/GET p "/"))) "serves again once drained")))))

(deftest ^:integration queue-depth-and-wait-in-server-stats
  (let [gate (CountDownLatch. 1)
        entered (CountDownLatch. 1)]
    (with-server [s (fn [_] (.countDown entered) (.await gate 60 TimeUnit/SECONDS) {:status 200 :body "done"})
                  {:mode :worker-pool :worker-threads 1}]
      (let [p (ts/port s)
            first-one (future (ts/GET p "/"))
            _ (.await entered 30 TimeUnit/SECONDS)
            queued (doall (for [_ (range 2)] (future (ts/GET p "/"))))]
        (is (ts/eventually #(= 2 (:queue-depth (http/server-stats s)))) "two requests wait for the only worker")
        (is (= 3 (:pending (http/server-stats s))))
        (Thread/sleep 300)
        (.countDown gate)
        (is (= ["done" "done" "done"] (map (comp :body deref) (cons first-one queued))))
        (let [st (http/server-stats s)]
          (is (= 0 (:queue-depth st)))
          (is (= 3 (:handlers-started st)))
          (is (<= 300 (:queue-wait-ms-max st) 10000) "the longest wait covers the time the worker was held")
          (is (<= (* 2 300) (:queue-wait-ms-total st)) "both queued requests waited at least that long")
          (is (= 0 (:rejected st))))))))

(deftest ^:integration event-loop-mode-has-no-queue
  (with-server [s (fn [_] {:status 200 :body "ok"}) {:mode :event-loop}]
    (is (= 200 (:status (ts/GET (ts/port s) "/"))))
    (is (= {:queue-depth 0 :handlers-started 0 :queue-wait-ms-total 0.0 :rejected 0}
           (select-keys (http/server-stats s) [:queue-depth :handlers-started :queue-wait-ms-total :rejected])))))

(deftest ^:integration max-connections
  (with-server [s (fn [_] {:status 200 :body "ok"}) {:max-connections 2}]
    (let [p (ts/port s)
          a (ts/open p) b (ts/open p)]
      (try
        (ts/write! a (ts/request-text "GET" "/"))
        (ts/write! b (ts/request-text "GET" "/"))
        (is (= [200 200] [(:status (ts/read-response a)) (:status (ts/read-response b))]))
        (let [c (ts/open p)]
          (try (is (= 503 (:status (ts/read-response c))))
               (is (ts/eof? c))
               (finally (ts/close! c))))
        (finally (ts/close! a) (ts/close! b)))
      ;; the server sees the close asynchronously: a new connection is served once it did (not after a fixed 100 ms)
      (is (ts/eventually #(= 200 (:status (ts/GET p "/"))) 30000) "a slot frees when a connection closes"))))

(deftest ^:integration pipelining-beyond-the-buffer-depth
  (with-server [s (fn [req] {:status 200 :body (:uri req)}) {:max-pipelined 4}]
    (let [c (ts/open (ts/port s))]
      (try (ts/write! c (apply str (for [i (range 100)] (ts/request-text "GET" (str "/" i)))))
           (is (= (map #(str "/" %) (range 100)) (for [_ (range 100)] (:body (ts/read-response c)))))
           (finally (ts/close! c))))))
