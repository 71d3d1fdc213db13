(ns herald.http.http1-parser-test
  "herald's own HTTP/1.1 request decoder over real sockets: the framing it refuses (RFC 9112 6.1, 5.2), heads and
  bodies split across writes, pipelined batches, and what a handler sees of the parsed head."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http.test-support :as ts :refer [with-server]]))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private calls (atom 0))

(defn- echo [req]
  (swap! calls inc)
  {:status 200
   :body (pr-str [(:request-method req) (:uri req) (:query-string req) (:server-name req) (:protocol req)
                  (into (sorted-map) (:headers req)) (some-> ^java.io.InputStream (:body req) slurp)])})

(defn- answer-and-eof [port text]
  (let [c (ts/open port 3000)]
    (try (ts/write! c text)
         (let [r (ts/read-response c)] [(:status r) (ts/eof? c)])
         (finally (ts/close! c)))))

(deftest ^:integration ambiguous-framing-is-refused-before-the-handler
  (with-server [s echo {:max-body-bytes 100}]
    (let [p (ts/port s)]
      (reset! calls 0)
      (testing "both Content-Length and Transfer-Encoding (RFC 9112 6.1: request smuggling)"
        (is (= [400 true] (answer-and-eof p (str "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")))))
      (testing "Content-Length values that differ; Transfer-Encoding on HTTP/1.0; chunked twice"
        (is (= [400 true] (answer-and-eof p "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")))
        (is (= [400 true] (answer-and-eof p "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")))
        (is (= [400 true] (answer-and-eof p "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n"))))
      (testing "obs-fold and whitespace before ':' (RFC 9112 5.1, 5.2)"
        (is (= [400 true] (answer-and-eof p "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n")))
        (is (= [400 true] (answer-and-eof p "GET / HTTP/1.1\r\nHost : x\r\n\r\n"))))
      (testing "a declared body over the limit is refused at the head; a chunk over it before it is read"
        (is (= [413 true] (answer-and-eof p "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n")))
        (is (= [413 true] (answer-and-eof p "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n"))))
      (testing "a chunk not followed by CRLF"
        (is (= [400 true] (answer-and-eof p "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n"))))
      (is (zero? @calls) "the handler saw none of them"))))

(deftest ^:integration heads-and-bodies-split-across-writes
  (with-server [s echo {}]
    (let [p (ts/port s)
          text (str "POST /p?q=1 HTTP/1.1\r\nHost: h.example:81\r\nX-Multi: a\r\nx-multi: b\r\nCookie: c=1\r\n"
                    "Cookie: d=2\r\nTransfer-Encoding: chunked\r\n\r\n3;ext\r\nabc\r\n2\r\nde\r\n0\r\nT: t\r\n\r\n")
          expected (pr-str [:post "/p" "q=1" "h.example" "HTTP/1.1"
                            (sorted-map "cookie" "c=1; d=2" "host" "h.example:81" "transfer-encoding" "chunked"
                                        "x-multi" "a,b")
                            "abcde"])]
      (doseq [step [1 2 7 31]]
        (let [c (ts/open p 5000)]
          (try (doseq [part (partition-all step text)]
                 (ts/write! c (apply str part))
                 (Thread/sleep 1))
               (let [r (ts/read-response c)]
                 (is (= 200 (:status r)) (str "step " step))
                 (is (= expected (:body r)) (str "step " step)))
               (finally (ts/close! c))))))))

(deftest ^:integration a-pipelined-batch-is-answered-in-order
  (with-server [s echo {:mode :event-loop}]
    (let [c (ts/open (ts/port s) 5000)]
      (try (ts/write! c (apply str (for [i (range 16)]
                                     (str "GET /n/" i " HTTP/1.1\r\nHost: localhost:8080\r\nAccept: text/plain\r\n\r\n"))))
           (doseq [i (range 16)]
             (let [r (ts/read-response c)]
               (is (= 200 (:status r)))
               (is (= (pr-str [:get (str "/n/" i) nil "localhost" "HTTP/1.1"
                               (sorted-map "accept" "text/plain" "host" "localhost:8080") nil])
                      (:body r)))))
           (finally (ts/close! c))))))
