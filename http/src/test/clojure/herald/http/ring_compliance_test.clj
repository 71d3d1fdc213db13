(ns herald.http.ring-compliance-test
  "The 13 points of Ring 1.x compliance (shared/RING.md), each driven over a real socket."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io ByteArrayInputStream File InputStream)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- capturing
  "A handler that records each request (body read to a String, its class kept) and answers 200 \"ok\"."
  []
  (let [seen (atom [])]
    [seen (fn [req]
            (swap! seen conj (assoc req :body-class (some-> (:body req) class)
                                    :body (some-> ^InputStream (:body req) slurp)))
            {:status 200 :headers {"Content-Type" "text/plain"} :body "ok"})]))

(deftest ^:integration point-1-required-keys-and-types
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (is (= 200 (:status (ts/GET (ts/port s) "/x"))))
      (ts/check-request-map (first @seen) s "HTTP/1.1"))
    (testing ":headers is present even when the request has none (HTTP/1.0, no Host)"
      (reset! seen [])
      (with-server [s h {}]
        (ts/request (ts/port s) "GET / HTTP/1.0\r\n\r\n")
        (is (= {} (:headers (first @seen))))))))

(deftest ^:integration point-2-uri-raw-and-query-string
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (doseq [path ["/a%20b/c%2Fd?x=%41&y=1+2" "/p?" "/p" "/?a" "/u%C3%A9"]]
        (ts/GET (ts/port s) path))
      (let [[a b c d e] @seen]
        (is (= "/a%20b/c%2Fd" (:uri a)))
        (is (= "x=%41&y=1+2" (:query-string a)))
        (is (= "/p" (:uri b)))
        (is (= "" (:query-string b)))
        (is (= "/p" (:uri c)))
        (is (not (contains? c :query-string)))
        (is (= "/" (:uri d)))
        (is (= "a" (:query-string d)))
        (is (= "/u%C3%A9" (:uri e)))))))

(deftest ^:integration point-3-server-name-and-port
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (ts/GET (ts/port s) "/" {"Host" "example.com:1234"})
      (ts/GET (ts/port s) "/" {"Host" "[::1]:99"})
      (ts/GET (ts/port s) "/" {"Host" "plain.example"})
      (let [[a b c] @seen]
        (is (= "example.com" (:server-name a)))
        (is (= (ts/port s) (:server-port a)) "the listening port, not the Host header's")
        (is (= "[::1]" (:server-name b)))
        (is (= "plain.example" (:server-name c)))))))

(deftest ^:integration point-4-remote-addr
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (ts/GET (ts/port s) "/" {"X-Forwarded-For" "203.0.113.9"})
      (is (= "127.0.0.1" (:remote-addr (first @seen))) "X-Forwarded-For ignored by default"))
    (reset! seen [])
    (with-server [s h {:proxy? true}]
      (ts/GET (ts/port s) "/" {"X-Forwarded-For" "203.0.113.9, 10.0.0.1" "X-Forwarded-Proto" "https"})
      (is (= "203.0.113.9" (:remote-addr (first @seen))) "trusted with :proxy? true")
      (is (= :https (:scheme (first @seen)))))))

(deftest ^:integration point-5-protocol
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (ts/request (ts/port s) "GET / HTTP/1.0\r\nHost: x\r\n\r\n")
      (ts/GET (ts/port s) "/")
      (is (= ["HTTP/1.0" "HTTP/1.1"] (map :protocol @seen))))))

(deftest ^:integration point-6-request-method
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (doseq [m ["GET" "POST" "PUT" "DELETE" "PATCH" "OPTIONS" "PURGE" "PROPFIND"]]
        (ts/request (ts/port s) (ts/request-text m "/" {"Content-Length" "0"})))
      (is (= [:get :post :put :delete :patch :options :purge :propfind] (map :request-method @seen))))))

(deftest ^:integration point-7-headers
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (ts/GET (ts/port s) "/" {"X-Mixed-Case" "v" "X-Rep" ["a" "b"] "Cookie" ["a=1" "b=2"]})
      (let [hs (:headers (first @seen))]
        (is (every? #(= % (str/lower-case %)) (keys hs)))
        (is (= "v" (hs "x-mixed-case")))
        (is (= "a,b" (hs "x-rep")))
        (is (= "a=1; b=2" (hs "cookie")))
        (is (= "localhost" (hs "host")))))))

(deftest ^:integration point-8-body
  (let [[seen h] (capturing)]
    (with-server [s h {:max-body-bytes 100}]
      (let [p (ts/port s)]
        (ts/request p (ts/request-text "POST" "/" {} "héllo body"))
        (ts/request p (str "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"))
        (ts/request p (ts/request-text "POST" "/" {"Content-Length" "0"}))
        (let [[a b c] @seen]
          (is (= "héllo body" (:body a)))
          (is (isa? (:body-class a) InputStream))
          (is (= "hello world" (:body b)) "chunked upload")
          (is (contains? #{nil ""} (:body c))))
        (testing "bodies over :max-body-bytes get 413 without reaching the handler"
          (reset! seen [])
          (is (= 413 (:status (ts/request p (ts/request-text "POST" "/" {} (apply str (repeat 101 "x")))))))
          (is (= 413 (:status (ts/request p (str "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                 "40\r\n" (apply str (repeat 64 "y")) "\r\n"
                                                 "40\r\n" (apply str (repeat 64 "y")) "\r\n0\r\n\r\n")))))
          (is (empty? @seen)))))))

(defrecord Greeting [who])

(extend-protocol http/StreamableResponseBody
  Greeting
  (write-body-to-stream [body _response ^java.io.OutputStream out]
    (with-open [out out]
      (.write out (.getBytes (str "hello, " (:who body)) StandardCharsets/UTF_8)))))

(deftest ^:integration point-9-responses
  (let [closed (atom false)
        file (doto (File/createTempFile "herald" ".txt") (.deleteOnExit) (spit "file body"))
        routes {"/no-headers" {:status 200 :body "x"}
                "/multi" {:status 200 :headers {"X-Multi" ["a" "b"]} :body "m"}
                "/latin1" {:status 200 :headers {"Content-Type" "text/plain; charset=ISO-8859-1"} :body "café"}
                "/utf8" {:status 200 :headers {"Content-Type" "text/plain"} :body "café"}
                "/bytes" {:status 200 :body (.getBytes "raw" StandardCharsets/UTF_8)}
                "/seq" {:status 200 :body (map identity ["a" 1 :k nil "z"])}
                "/file" {:status 200 :body file}
                "/stream" (fn [] {:status 200 :body (proxy [ByteArrayInputStream] [(.getBytes "streamed")]
                                                     (close [] (reset! closed true)))})
                "/nil" {:status 204}
                "/nil-200" {:status 200 :body nil}
                "/custom" {:status 200 :body (->Greeting "ring")}
                "/ctype" {:status 200 :headers {"content-type" "application/x-Odd;  charset=UTF-8"} :body "{}"}}
        h (fn [req] (let [r (routes (:uri req))] (if (fn? r) (r) r)))]
    (with-server [s h {}]
      (let [p (ts/port s)
            get #(ts/GET p %)]
        (is (= "x" (:body (get "/no-headers"))))
        (is (= [["X-Multi" "a"] ["X-Multi" "b"]] (filter #(= "X-Multi" (first %)) (:lines (get "/multi")))))
        (is (= [(unchecked-byte 0xe9)] (take-last 1 (seq (:bytes (get "/latin1"))))) "String encoded with the charset")
        (is (= "café" (:body (get "/utf8"))))
        (is (= "raw" (:body (get "/bytes"))))
        (let [r (get "/seq")]
          (is (= "chunked" ((:headers r) "transfer-encoding")))
          (is (= ["a" "1" ":k" "z"] (map #(String. ^bytes %) (:chunks r))) "each element str-ed, written, flushed"))
        (let [r (get "/file")]
          (is (= "file body" (:body r)))
          (is (= "9" ((:headers r) "content-length"))))
        (is (= "streamed" (:body (get "/stream"))))
        (is (true? @closed) "InputStream closed after writing")
        (is (= 204 (:status (get "/nil"))))
        (is (= "0" ((:headers (get "/nil-200")) "content-length")))
        (is (= "hello, ring" (:body (get "/custom"))) "StreamableResponseBody extension")
        (is (= "application/x-Odd;  charset=UTF-8" ((:headers (get "/ctype")) "content-type"))
            "the user's Content-Type is never rewritten")))))

(deftest ^:integration point-10-head-and-status-range
  (with-server [s (fn [req] (case (:uri req)
                              "/s" {:status (Long/parseLong (:query-string req)) :body "b"}
                              {:status 200 :body "twelve bytes"}))
                {:error-logger (fn [_ _])}]
    (let [c (ts/open (ts/port s))]
      (try
        (ts/write! c (str (ts/request-text "HEAD" "/") (ts/request-text "GET" "/")))
        (let [head (ts/read-response c true)
              get (ts/read-response c)]
          (is (= "12" ((:headers head) "content-length")))
          (is (= "twelve bytes" (:body get)) "no body bytes after the HEAD response"))
        (finally (ts/close! c))))
    (doseq [code [100 101 199 200 299 418 599]]
      (let [c (ts/open (ts/port s))]
        (try (ts/write! c (ts/request-text "GET" (str "/s?" code)))
             (is (= code (:status (ts/read-response c)))) (finally (ts/close! c)))))
    (is (= 500 (:status (ts/GET (ts/port s) "/s?600"))))
    (is (= 500 (:status (ts/GET (ts/port s) "/s?99"))))))

(deftest ^:integration point-11-async-handlers
  (let [errors (atom [])]
    (with-server [s (fn [req respond raise]
                      (case (:uri req)
                        "/later" (future (Thread/sleep 20) (respond {:status 200 :body "later"}))
                        "/raise" (future (raise (ex-info "boom" {})))
                        "/throw" (throw (ex-info "sync boom" {}))
                        "/twice" (do (respond {:status 200 :body "first"}) (respond {:status 201 :body "second"}))))
                  {:async? true :error-logger (fn [t _] (swap! errors conj t))}]
      (let [p (ts/port s)]
        (is (= "later" (:body (ts/GET p "/later"))))
        (is (= 500 (:status (ts/GET p "/raise"))))
        (is (= 500 (:status (ts/GET p "/throw"))))
        (let [c (ts/open p)]
          (try (ts/write! c (str (ts/request-text "GET" "/twice") (ts/request-text "GET" "/later")))
               (is (= "first" (:body (ts/read-response c))))
               (is (= "later" (:body (ts/read-response c))) "the second respond was ignored")
               (finally (ts/close! c))))
        (is (= ["boom" "sync boom"] (map ex-message @errors)))))))

(deftest ^:integration point-12-websockets
  (let [events (atom [])
        done (promise)
        listener {:on-open (fn [s] (swap! events conj :open) (http/ws-send s "welcome"))
                  :on-message (fn [s m] (swap! events conj [:message (str m)]) (http/ws-send s (str "echo:" m)))
                  :on-pong (fn [_ _] (swap! events conj :pong))
                  :on-close (fn [_ code _] (swap! events conj [:close code]) (deliver done true))}]
    (with-server [s (fn [_] {:ring.websocket/listener listener}) {}]
      (let [client (ts/ws-connect (ts/port s) "/ws")]
        (is (= "welcome" (ts/ws-receive client)))
        (ts/ws-send client "hi")
        (is (= "echo:hi" (ts/ws-receive client)))
        (ts/ws-ping client "p")
        (is (= :pong (ts/ws-receive client)) "automatic pong when the listener has no :on-ping")
        (ts/ws-close client 1000)
        (is (true? (deref done 30000 false)))
        (is (= [:open [:message "hi"] [:close 1000]] @events))))))

(deftest ^:integration point-13-wire-behaviour
  (with-server [s (fn [req] (case (:uri req)
                              "/stream" {:status 200 :body (list "a" "b")}
                              {:status 200 :body (:uri req)}))
                {}]
    (let [p (ts/port s)]
      (testing "16-deep pipelining answered in order, one connection"
        (let [c (ts/open p)]
          (try (ts/write! c (apply str (for [i (range 16)] (ts/request-text "GET" (str "/r" i)))))
               (is (= (for [i (range 16)] (str "/r" i)) (for [_ (range 16)] (:body (ts/read-response c)))))
               (finally (ts/close! c)))))
      (testing "keep-alive: HTTP/1.1 by default, HTTP/1.0 with Connection: keep-alive, else close"
        (let [c (ts/open p 1000)]
          (try (ts/write! c (ts/request-text "GET" "/a"))
               (ts/read-response c)
               (ts/write! c (ts/request-text "GET" "/b"))
               (is (= "/b" (:body (ts/read-response c))))
               (finally (ts/close! c))))
        (let [c (ts/open p 1000)]
          (try (ts/write! c "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
               (is (= "keep-alive" ((:headers (ts/read-response c)) "connection")))
               (ts/write! c "GET /b HTTP/1.0\r\n\r\n")
               (is (= "/b" (:body (ts/read-response c))))
               (is (ts/eof? c) "HTTP/1.0 without keep-alive closes")
               (finally (ts/close! c)))))
      (testing "Server header; Date changes every second"
        (let [a (ts/GET p "/")
              _ (Thread/sleep 1100)
              b (ts/GET p "/")]
          (is (= "herald" ((:headers a) "server")))
          (is (some? ((:headers a) "date")))
          (is (not= ((:headers a) "date") ((:headers b) "date")))))
      (testing "Content-Length on fixed bodies, chunked on streamed ones"
        (is (= "2" ((:headers (ts/GET p "/x")) "content-length")))
        (is (= "chunked" ((:headers (ts/GET p "/stream")) "transfer-encoding")))))))

(deftest ^:integration handler-exception-is-a-500-without-stack-trace
  (let [logged (promise)]
    (with-server [s (fn [_] (throw (IllegalStateException. "secret detail")))
                  {:error-logger (fn [t req] (deliver logged [t (:uri req)]))}]
      (let [r (ts/GET (ts/port s) "/boom")]
        (is (= 500 (:status r)))
        (is (not (str/includes? (:body r) "secret")))
        (is (not (str/includes? (:body r) "at herald")))
        (let [[t uri] (deref logged 30000 nil)]
          (is (instance? IllegalStateException t))
          (is (= "/boom" uri)))))))
