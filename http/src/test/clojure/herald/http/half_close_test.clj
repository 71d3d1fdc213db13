(ns herald.http.half-close-test
  "Clients that half-close (FIN after their last request, as `printf ... | nc -N` and HTTP/1.0 tools do): every
  complete request is answered, pipelined ones in order, then the server closes; over raw sockets, in every mode."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.net Socket)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private modes [:virtual-threads :worker-pool :event-loop])

(defn- handler [calls]
  (fn [req]
    (swap! calls conj (:uri req))
    (when (= "/slow" (:uri req)) (Thread/sleep 250))
    {:status 200 :headers {"Content-Type" "text/plain"}
     :body (str (:uri req) " " (some-> ^java.io.InputStream (:body req) slurp))}))

(defn- half-closed
  "Writes `text` on a fresh connection, shuts down the sending side, then reads responses until the server closes:
  {:responses [...] :eof? bool}."
  [port ^String text]
  (let [c (ts/open port 5000)]
    (try (ts/write! c text)
         (.shutdownOutput ^Socket (:socket c))
         (let [rs (loop [acc []]
                    (if-let [r (try (ts/read-response c) (catch java.net.SocketTimeoutException _ nil))]
                      (recur (conj acc r))
                      acc))]
           {:responses rs :eof? (ts/eof? c)})
         (finally (ts/close! c)))))

(defn- req10
  ([uri] (str "GET " uri " HTTP/1.0\r\n\r\n"))
  ([uri keep-alive?] (str "GET " uri " HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")))

(deftest ^:integration half-closed-clients-get-every-answer
  (doseq [mode modes]
    (testing (str mode)
      (let [calls (atom [])]
        (with-server [s (handler calls) {:mode mode}]
          (let [p (ts/port s)]
            (testing "HTTP/1.1: one request, then FIN"
              (let [{:keys [responses eof?]} (half-closed p (ts/request-text "GET" "/a"))]
                (is (= [200] (map :status responses)))
                (is (= "/a " (:body (first responses))))
                (is eof? "the server closes once the answers are out")))
            (testing "HTTP/1.1: a slow handler, then FIN"
              (let [{:keys [responses eof?]} (half-closed p (ts/request-text "GET" "/slow"))]
                (is (= ["/slow "] (map :body responses)))
                (is eof?)))
            (testing "HTTP/1.1: pipelined requests around a slow one, with a body, then FIN: all answered in order"
              (let [text (str (ts/request-text "GET" "/1") (ts/request-text "GET" "/slow")
                              (ts/request-text "POST" "/3" {} "body") (ts/request-text "GET" "/4"))
                    {:keys [responses eof?]} (half-closed p text)]
                (is (= ["/1 " "/slow " "/3 body" "/4 "] (map :body responses)))
                (when (not= mode :event-loop) ; there all four are answered inline before the FIN is read
                  (is (= "close" (get-in (peek responses) [:headers "connection"]))
                      "an answer written after the FIN says the connection closes"))
                (is eof?)))
            (testing "HTTP/1.0 without keep-alive, then FIN"
              (let [{:keys [responses eof?]} (half-closed p (req10 "/slow"))]
                (is (= ["/slow "] (map :body responses)))
                (is eof?)))
            (testing "HTTP/1.0 keep-alive, pipelined, then FIN"
              (let [{:keys [responses eof?]} (half-closed p (str (req10 "/1" true) (req10 "/slow" true)
                                                                 (req10 "/3" true)))]
                (is (= ["/1 " "/slow " "/3 "] (map :body responses)))
                (is eof?)))
            (testing "a request cut short by the FIN is not answered; the complete ones before it are"
              (reset! calls [])
              (let [{:keys [responses eof?]}
                    (half-closed p (str (ts/request-text "GET" "/slow")
                                        "POST /cut HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"))]
                (is (= ["/slow "] (map :body responses)))
                (is eof?)
                (is (= ["/slow"] @calls) "the cut request never reached the handler")))
            (testing "a FIN with nothing sent, or half a head: closed without an answer"
              (is (= {:responses [] :eof? true} (half-closed p "")))
              (is (= {:responses [] :eof? true} (half-closed p "GET /x HTTP/1.1\r\nHo"))))
            (testing "the server still serves, and nothing stays open"
              (is (= "/ok " (:body (ts/GET p "/ok"))))
              ;; the server closes its side after the answer: waited for, not a fixed 100 ms
              (is (ts/eventually #(zero? (:connections (http/server-stats s))) 30000) "no connection left open"))))))))

(deftest ^:integration half-closed-with-async-handlers
  (with-server [s (fn [req respond _]
                    (future (Thread/sleep 200) (respond {:status 200 :body (:uri req)})))
                {:async? true}]
    (let [{:keys [responses eof?]} (half-closed (ts/port s) (str (ts/request-text "GET" "/a")
                                                                 (ts/request-text "GET" "/b")))]
      (is (= ["/a" "/b"] (map :body responses)))
      (is eof?))))
