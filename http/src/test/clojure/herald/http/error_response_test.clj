(ns herald.http.error-response-test
  "The answers herald makes itself (400, 408, 413, 414, 431, 500, 501, 503, 505): a short reason in the default
  body, and the `:error-response` function that answers them in the application's own format."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.http2 H2Client)
           (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- answer-and-eof
  "Writes `text` (String or bytes) on a fresh connection; returns the response with :eof? (the server closed)."
  [port text]
  (let [c (ts/open port 3000)]
    (try (ts/write! c text)
         (assoc (ts/read-response c) :eof? (ts/eof? c))
         (finally (ts/close! c)))))

(defn- utf8-target [] (.getBytes "GET /caf\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n" "UTF-8"))

(deftest ^:integration default-answers-name-the-reason
  (with-server [s (fn [_] {:status 200 :body "ok"}) {:max-request-line-bytes 256}]
    (let [p (ts/port s)]
      (testing "raw UTF-8 in the URL: the 400 says what was wrong and how to send it"
        (let [r (answer-and-eof p (utf8-target))]
          (is (= 400 (:status r)))
          (is (= "Bad Request: the request-target holds a raw non-ASCII byte: percent-encode it as UTF-8 (/caf%C3%A9, not /caf\u00e9)"
                 (:body r)))
          (is (= "text/plain; charset=utf-8" (get-in r [:headers "content-type"])))
          (is (:eof? r))))
      (testing "each rejection has its own short reason"
        (doseq [[text status phrase] [["GET / HTTP/1.1\r\n\r\n" 400 "needs a Host header"]
                                      ["GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" 400 "more than one Host"]
                                      ["GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n" 400 "'#'"]
                                      ["GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n" 400 "header line"]
                                      ["POST / HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n" 400 "Content-Length"]
                                      ["get / HTTP/1.1\r\nHost: x\r\n\r\n" 501 "case-sensitive"]
                                      ["GET / HTTP/2.5\r\nHost: x\r\n\r\n" 505 "HTTP/1.0, HTTP/1.1 and HTTP/2"]
                                      [(ts/request-text "GET" (str "/" (apply str (repeat 300 "a")))) 414 "request line"]]]
          (let [r (answer-and-eof p text)]
            (is (= status (:status r)) text)
            (is (str/includes? (:body r) phrase) (str text " -> " (:body r)))
            (is (:eof? r) text)))))))

(defn- json-errors
  "An :error-response function answering JSON like an application's other errors; records its calls."
  [calls]
  (fn [status info]
    (swap! calls conj [status info])
    {:status status
     :headers {"Content-Type" "application/json"}
     :body (str "{\"error\":\"" (name (:reason info)) "\",\"message\":\"" (:message info) "\"}")}))

(deftest ^:integration error-response-answers-in-the-applications-format
  (let [calls (atom [])
        logged (atom [])]
    (with-server [s (fn [req] (if (= "/boom" (:uri req)) (throw (ex-info "boom" {})) {:status 200 :body "ok"}))
                  {:error-response (json-errors calls) :error-logger (fn [t _] (swap! logged conj t))
                   :max-body-bytes 100 :max-header-bytes 512 :max-request-line-bytes 256 :request-timeout-ms 300}]
      (let [p (ts/port s)
            check (fn [text status reason]
                    (let [r (answer-and-eof p text)]
                      (is (= status (:status r)) (str reason))
                      (is (= "application/json" (get-in r [:headers "content-type"])) (str reason))
                      (is (str/starts-with? (:body r) (str "{\"error\":\"" (name reason) "\"")) (:body r))
                      r))]
        (testing "every refusal before the handler goes through the function, and the connection still closes"
          (is (:eof? (check (utf8-target) 400 :non-ascii-target)))
          (check "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" 413 :body-too-large)
          (check (str "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" (apply str (repeat 64 "a"))
                      "\r\n40\r\n" (apply str (repeat 64 "a")) "\r\n0\r\n\r\n") 413 :body-too-large)
          (check (ts/request-text "GET" (str "/" (apply str (repeat 300 "a")))) 414 :request-line-too-long)
          (check (ts/request-text "GET" "/" {"X-Big" (apply str (repeat 600 "b"))}) 431 :headers-too-large)
          (check "get / HTTP/1.1\r\nHost: x\r\n\r\n" 501 :lowercase-method)
          (check "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" 501 :unsupported-transfer-coding)
          (check "GET / HTTP/3.0\r\nHost: x\r\n\r\n" 505 :version-not-supported)
          (check "POST / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n" 417 :unsupported-expectation))
        (testing "408: a head that never completes, and a body that never completes"
          (is (:eof? (check "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " 408 :request-timeout)))
          (check "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc" 408 :request-timeout))
        (testing "a handler failure: 500 through the function too; the connection stays open"
          (let [c (ts/open p)]
            (try (ts/write! c (ts/request-text "GET" "/boom"))
                 (let [r (ts/read-response c)]
                   (is (= 500 (:status r)))
                   (is (= "{\"error\":\"handler-failed\",\"message\":\"the handler failed\"}" (:body r))))
                 (ts/write! c (ts/request-text "GET" "/"))
                 (is (= "ok" (:body (ts/read-response c))))
                 (finally (ts/close! c)))))
        (testing "HEAD gets the function's headers without a body"
          (let [r (ts/request p "HEAD /a#b HTTP/1.1\r\nHost: x\r\n\r\n" true)]
            (is (= 400 (:status r)))
            (is (= "application/json" (get-in r [:headers "content-type"])))))
        (testing "the function got the status and {:reason :message}"
          (is (= [400 {:reason :non-ascii-target
                       :message "the request-target holds a raw non-ASCII byte: percent-encode it as UTF-8 (/caf%C3%A9, not /caf\u00e9)"}]
                 (first @calls))))
        (testing "every answer is counted under the status herald chose"
          (is (= {400 2 408 2 413 2 414 1 417 1 431 1 500 1 501 2 505 1} (:errors (http/server-stats s)))))
        (is (= 1 (count @logged)) "only the handler's exception was logged")))))

(deftest ^:integration a-failing-or-invalid-error-response-falls-back-to-the-default
  (let [logged (atom [])
        mode (atom :throw)]
    (with-server [s (fn [_] {:status 200 :body "ok"})
                  {:error-response (fn [status _]
                                     (case @mode
                                       :throw (throw (IllegalStateException. "broken error page"))
                                       :nil nil
                                       :bad-status {:status 1000 :body "x"}
                                       :stream {:status status :body (list "a" "b" "c")}))
                   :error-logger (fn [t _] (swap! logged conj t))}]
      (let [p (ts/port s)]
        (doseq [m [:throw :nil :bad-status]]
          (reset! mode m)
          (let [r (answer-and-eof p "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n")]
            (is (= 400 (:status r)) (str m))
            (is (str/starts-with? (:body r) "Bad Request: ") (str m))
            (is (:eof? r) (str m))))
        (is (= 3 (count @logged)) "each failure of the function is logged")
        (is (instance? IllegalStateException (first @logged)))
        (testing "any body type works, a streamed one included"
          (reset! mode :stream)
          (let [r (answer-and-eof p "GET /a#b HTTP/1.1\r\nHost: x\r\n\r\n")]
            (is (= [400 "abc" true] [(:status r) (:body r) (:eof? r)]))))
        (is (= "ok" (:body (ts/GET p "/"))))))))

(deftest ^:integration error-response-for-503s
  (testing "at :max-pending"
    (let [gate (CountDownLatch. 1)
          entered (CountDownLatch. 1)
          calls (atom [])]
      (with-server [s (fn [_] (.countDown entered) (.await gate 5 TimeUnit/SECONDS) {:status 200 :body "done"})
                    {:max-pending 1 :error-response (json-errors calls)}]
        (let [p (ts/port s)
              blocked (future (ts/GET p "/"))]
          (is (.await entered 30 TimeUnit/SECONDS))
          (let [r (ts/GET p "/")]
            (is (= 503 (:status r)))
            (is (str/includes? (:body r) "too-many-pending")))
          (.countDown gate)
          (is (= "done" (:body @blocked)))))))
  (testing "at :max-connections, before any request is read"
    (with-server [s (fn [_] {:status 200 :body "ok"})
                  {:max-connections 1
                   :error-response (fn [status info] {:status status :headers {"Content-Type" "application/json"
                                                                               "Retry-After" "5"}
                                                      :body (str "{\"error\":\"" (name (:reason info)) "\"}")})}]
      (let [p (ts/port s)
            held (ts/open p)]
        (try (ts/write! held (ts/request-text "GET" "/"))
             (is (= "ok" (:body (ts/read-response held))))
             (let [r (ts/GET p "/")]
               (is (= 503 (:status r)))
               (is (= "{\"error\":\"too-many-connections\"}" (:body r)))
               (is (= "5" (get-in r [:headers "retry-after"])))
               (is (= "close" (get-in r [:headers "connection"]))))
             (is (= {503 1} (:errors (http/server-stats s))))
             (finally (ts/close! held)))))))

(deftest ^:integration error-response-option-is-validated
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #":error-response"
                        (http/start-server (fn [_]) {:port 0 :error-response "not a function"}))))

(deftest ^:integration error-response-for-http2-streams
  (let [calls (atom [])]
    (with-server [s (fn [_] {:status 200 :body "ok"})
                  {:error-response (json-errors calls) :max-header-bytes 1024 :max-body-bytes 10}]
      (with-open [c (H2Client/connect "127.0.0.1" (int (ts/port s)))]
        (let [hs (fn [m] (let [l (java.util.ArrayList.)] (doseq [[k v] m] (.add l (into-array String [k v]))) l))]
          (testing "a header list over the limit: the function's 431"
            (let [r (.request c "GET" "/" (hs {"x-big" (apply str (repeat 1100 "h"))}) nil)]
              (is (= 431 (.status r)))
              (is (= "application/json" (.header r "content-type")))
              (is (str/includes? (.text r) "headers-too-large"))))
          (testing "a body over the limit: the function's 413, through the stream's exchange"
            (let [r (.request c "POST" "/" (hs {}) (byte-array 11))]
              (is (= 413 (.status r)))
              (is (str/includes? (.text r) "body-too-large")))))))))
