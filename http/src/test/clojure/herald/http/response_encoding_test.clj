(ns herald.http.response-encoding-test
  "The response writer's caches over real sockets (one event loop, so every response shares them): a header map
  remembered by identity, the last head, the last String body's bytes. Each test changes one input between
  responses and checks that nothing stale is written; plus charsets, non-ASCII bodies, CR/LF refusal and the
  server's own error answers in server-stats."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.nio.charset Charset StandardCharsets)
           (java.util ArrayList)
           (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private one-loop {:mode :event-loop :io-threads 1})

(defn- get-all
  "Sends GET for each uri pipelined on one connection; returns the responses in order."
  [port uris & {:keys [head? version] :or {version "HTTP/1.1"}}]
  (let [c (ts/open port)]
    (try
      (ts/write! c (apply str (for [u uris]
                                (str (if head? "HEAD " "GET ") u " " version "\r\nHost: x\r\n"
                                     (when (= version "HTTP/1.0") "Connection: keep-alive\r\n") "\r\n"))))
      (doall (for [_ uris] (ts/read-response c head?)))
      (finally (ts/close! c)))))

(defn- header [r k] (get-in r [:headers k]))

(deftest ^:integration a-constant-header-map-is-written-the-same-every-time
  (let [hs {"Content-Type" "text/plain" "X-A" "1" "X-Many" ["a" "b"]}]
    (with-server [s (fn [_] {:status 200 :headers hs :body "Hello, World!"}) one-loop]
      (let [rs (get-all (ts/port s) (repeat 5 "/"))]
        (is (= 5 (count rs)))
        (doseq [r rs]
          (is (= "HTTP/1.1 200 OK" (:status-line r)))
          (is (= [["Content-Type" "text/plain"] ["X-A" "1"] ["X-Many" "a"] ["X-Many" "b"] ["Server" "herald"]]
                 (take 5 (:lines r))))
          (is (= "13" (header r "content-length")))
          (is (= "Hello, World!" (:body r))))))))

(deftest ^:integration status-length-and-connection-change-under-one-header-map
  (let [hs {"Content-Type" "text/plain"}]
    (with-server [s (fn [req]
                      (case (:uri req)
                        "/a" {:status 200 :headers hs :body "a"}
                        "/bb" {:status 404 :headers hs :body "bb"}
                        "/nil" {:status 204 :headers hs}
                        "/bytes" {:status 200 :headers hs :body (.getBytes "bytes!")}
                        "/close" {:status 200 :headers (assoc hs "Connection" "close") :body "a"}))
                  one-loop]
      (let [[a bb nothing bytes a2] (get-all (ts/port s) ["/a" "/bb" "/nil" "/bytes" "/a"])]
        (is (= ["HTTP/1.1 200 OK" "1" "a"] [(:status-line a) (header a "content-length") (:body a)]))
        (is (= ["HTTP/1.1 404 Not Found" "2" "bb"] [(:status-line bb) (header bb "content-length") (:body bb)]))
        (is (= "HTTP/1.1 204 No Content" (:status-line nothing)))
        (is (nil? (header nothing "content-length")) "no Content-Length on a 204")
        (is (= ["6" "bytes!"] [(header bytes "content-length") (:body bytes)]))
        (is (= ["1" "a" nil] [(header a2 "content-length") (:body a2) (header a2 "connection")])))
      (testing "HTTP/1.0 keep-alive, then a close, with the same map"
        (let [[r1 r2] (get-all (ts/port s) ["/a" "/a"] :version "HTTP/1.0")]
          (is (= "keep-alive" (header r1 "connection") (header r2 "connection"))))
        (let [[r] (get-all (ts/port s) ["/close"])]
          (is (= "close" (header r "connection")))))
      (testing "HEAD: the length of the body, no body"
        (let [[r] (get-all (ts/port s) ["/bb"] :head? true)]
          (is (= ["2" ""] [(header r "content-length") (:body r)])))))))

(deftest ^:integration a-map-that-may-change-is-encoded-every-time
  (testing "a mutable list as a value: the map is the same object, its rendering is not"
    (let [values (ArrayList. ["one"])
          hs {"X-List" values}]
      (with-server [s (fn [_] {:status 200 :headers hs :body "x"}) one-loop]
        (is (= "one" (header (ts/GET (ts/port s) "/") "x-list")))
        (.add values "two")
        (is (= ["one" "two"] (header (ts/GET (ts/port s) "/") "x-list"))))))
  (testing "an object rendered with toString"
    (let [n (atom 0)
          v (reify Object (toString [_] (str "v" @n)))
          hs {"X-Obj" v}]
      (with-server [s (fn [_] {:status 200 :headers hs :body "x"}) one-loop]
        (is (= "v0" (header (ts/GET (ts/port s) "/") "x-obj")))
        (swap! n inc)
        (is (= "v1" (header (ts/GET (ts/port s) "/") "x-obj"))))))
  (testing "a java.util.HashMap of headers"
    (let [hs (java.util.HashMap. {"X-A" "1"})]
      (with-server [s (fn [_] {:status 200 :headers hs :body "x"}) one-loop]
        (is (= "1" (header (ts/GET (ts/port s) "/") "x-a")))
        (.put hs "X-A" "2")
        (is (= "2" (header (ts/GET (ts/port s) "/") "x-a")))))))

(deftest ^:integration another-map-is-never-served-the-remembered-bytes
  (let [a {"X-Which" "a"}
        b {"X-Which" "b"}
        which (atom a)]
    (with-server [s (fn [_] {:status 200 :headers @which :body "x"}) one-loop]
      (is (= ["a" "a"] (map #(header % "x-which") (get-all (ts/port s) ["/" "/"]))))
      (reset! which b)
      (is (= ["b" "b"] (map #(header % "x-which") (get-all (ts/port s) ["/" "/"]))))
      (reset! which (assoc b "X-More" "1"))
      (let [r (ts/GET (ts/port s) "/")]
        (is (= ["b" "1"] [(header r "x-which") (header r "x-more")])))
      (reset! which nil)
      (let [r (ts/GET (ts/port s) "/")]
        (is (nil? (header r "x-which")))
        (is (= "1" (header r "content-length")))))))

(deftest ^:integration cr-or-lf-in-a-header-is-refused-every-time
  (let [bad-value {"X-Bad" "a\r\nSet-Cookie: evil=1"}
        bad-lf {"X-Bad" "a\nb"}
        bad-name {"X-Bad\r\nInjected" "1"}
        bad-in-list {"X-Bad" ["ok" "a\rb"]}
        good {"X-Good" "1"}
        which (atom good)
        errors (atom 0)]
    (with-server [s (fn [_] {:status 200 :headers @which :body "x"})
                  (assoc one-loop :error-logger (fn [_ _] (swap! errors inc)))]
      (doseq [bad [bad-value bad-lf bad-name bad-in-list]]
        (reset! which good)
        (is (= 200 (:status (ts/GET (ts/port s) "/"))))
        (reset! which bad)
        (dotimes [_ 2]
          (let [r (ts/GET (ts/port s) "/")]
            (is (= 500 (:status r)) (pr-str bad))
            (is (not-any? #(str/includes? (str/lower-case (first %)) "set-cookie") (:lines r)))
            (is (nil? (header r "x-bad"))))))
      (is (= 8 @errors))
      (is (= {500 8} (:errors (http/server-stats s)))))))

(defn- body-bytes ^bytes [r] (:bytes r))

(deftest ^:integration string-bodies-in-the-response-charset
  (let [text "h\u00e9llo \u20ac \ud83d\ude00 \u00ff"
        lone "a\ud800b\udc00c"
        types {"/utf8" "text/plain; charset=utf-8" "/none" "text/plain" "/latin1" "text/plain; charset=ISO-8859-1"
               "/ascii" "text/plain;charset=\"us-ascii\"" "/utf16" "text/plain; charset=UTF-16"
               "/bogus" "text/plain; charset=no-such-charset"}
        expected {"/utf8" StandardCharsets/UTF_8 "/none" StandardCharsets/UTF_8 "/latin1" StandardCharsets/ISO_8859_1
                  "/ascii" StandardCharsets/US_ASCII "/utf16" StandardCharsets/UTF_16
                  "/bogus" StandardCharsets/UTF_8}]
    (with-server [s (fn [req]
                      (let [[path which] (str/split (:uri req) #"/(?=[a-z0-9]+$)")]
                        {:status 200 :headers {"Content-Type" (types (str "/" which))}
                         :body (case path "/text" text "/lone" lone "/ascii-text" "plain ascii" "/latin" "caf\u00e9")}))
                  one-loop]
      (doseq [body ["/text" "/lone" "/ascii-text" "/latin"]
              [t ^Charset cs] expected]
        (let [s-body ({"/text" text "/lone" lone "/ascii-text" "plain ascii" "/latin" "caf\u00e9"} body)
              want (.getBytes ^String s-body cs)
              ;; twice in a row: the second time the String's bytes come from the cache
              rs (get-all (ts/port s) [(str body t) (str body t) (str body t)])]
          (doseq [r rs]
            (is (= (seq want) (seq (body-bytes r))) (str body t))
            (is (= (str (alength want)) (header r "content-length")) (str body t))))))))

(deftest ^:integration the-same-string-in-another-charset-is-encoded-again
  (let [text "caf\u00e9"
        cs (atom "utf-8")]
    (with-server [s (fn [_] {:status 200 :headers {"Content-Type" (str "text/plain; charset=" @cs)} :body text})
                  one-loop]
      (is (= [[99 97 102 -61 -87]] (distinct (map (comp seq body-bytes) (get-all (ts/port s) ["/" "/" "/"])))))
      (reset! cs "ISO-8859-1")
      (is (= [[99 97 102 -23]] (distinct (map (comp seq body-bytes) (get-all (ts/port s) ["/" "/" "/"]))))))))

(deftest ^:integration long-and-large-string-bodies
  (let [long-ascii (apply str (repeat 5000 "abcdefghij"))
        long-mixed (str long-ascii "\u00e9")
        large (apply str (repeat 30000 "0123456789"))]
    (with-server [s (fn [req] {:status 200 :body (case (:uri req) "/a" long-ascii "/m" long-mixed "/l" large)})
                  one-loop]
      (doseq [[u ^String want] [["/a" long-ascii] ["/m" long-mixed] ["/l" large]]]
        (let [rs (get-all (ts/port s) [u u])]
          (doseq [r rs]
            (is (= want (:body r)))
            (is (= (str (alength (.getBytes want StandardCharsets/UTF_8))) (header r "content-length")))))))))

(deftest ^:integration the-servers-own-errors-are-counted-by-status
  (with-server [s (fn [req] (if (= "/boom" (:uri req)) (throw (ex-info "boom" {})) {:status 200 :body "ok"}))
                {:max-body-bytes 10 :max-header-bytes 1024 :error-logger (fn [_ _])}]
    (is (= {} (:errors (http/server-stats s))))
    (is (= 413 (:status (ts/request (ts/port s) (ts/request-text "POST" "/" {} "more than ten bytes")))))
    (is (= 431 (:status (ts/GET (ts/port s) "/" {"X-Big" (apply str (repeat 2000 "x"))}))))
    (is (= 400 (:status (ts/request (ts/port s) "GET / HTTP/1.1\r\n\r\n"))) "no Host")
    (is (= 500 (:status (ts/GET (ts/port s) "/boom"))))
    (is (= 500 (:status (ts/GET (ts/port s) "/boom"))))
    (is (= 200 (:status (ts/GET (ts/port s) "/"))))
    (is (= {400 1 413 1 431 1 500 2} (:errors (http/server-stats s))))))

(deftest ^:integration a-pipelined-answer-is-not-held-behind-a-blocked-handler
  ;; the answers of a connection's pipelined batch go back together, but not when a handler of the batch
  ;; blocks: the ones before it reach the client while it is blocked
  (let [first-read (CountDownLatch. 1)]
    (with-server [s (fn [req]
                      (if (= "/block" (:uri req))
                        {:status 200 :body (if (.await first-read 30 TimeUnit/SECONDS) "released" "timed out")}
                        {:status 200 :body (:uri req)}))
                  {:mode :virtual-threads}]
      (let [c (ts/open (ts/port s))]
        (try
          (ts/write! c (apply str (map #(ts/request-text "GET" %) ["/a" "/b" "/block" "/c"])))
          (is (= "/a" (:body (ts/read-response c))))
          (is (= "/b" (:body (ts/read-response c))))
          (.countDown first-read)
          (is (= "released" (:body (ts/read-response c))))
          (is (= "/c" (:body (ts/read-response c))))
          (finally (ts/close! c)))))))

(deftest ^:integration a-503-at-max-pending-is-counted-in-errors-and-rejected
  (let [gate (CountDownLatch. 1)
        entered (CountDownLatch. 1)]
    (with-server [s (fn [_] (.countDown entered) (.await gate 5 TimeUnit/SECONDS) {:status 200 :body "done"})
                  {:max-pending 1}]
      (let [p (ts/port s)
            blocked (future (ts/GET p "/"))]
        (is (.await entered 30 TimeUnit/SECONDS))
        (is (= 503 (:status (ts/GET p "/"))))
        (is (= 503 (:status (ts/GET p "/"))))
        (.countDown gate)
        (is (= "done" (:body @blocked)))
        (let [st (http/server-stats s)]
          (is (= {503 2} (:errors st)))
          (is (= 2 (:rejected st))))))))
