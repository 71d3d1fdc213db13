(ns herald.http.http2-test
  "HTTP/2 over real sockets: h2c with prior knowledge (Netty's HTTP/2 client), h2c by Upgrade and h2 by ALPN over TLS
  (the JDK's HttpClient); handler modes, body types, limits, concurrent streams, graceful shutdown with GOAWAY."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.http2 H2Client H2Client$Response)
           (java.io ByteArrayInputStream File InputStream)
           (java.net URI)
           (java.net.http HttpClient HttpClient$Version HttpRequest HttpRequest$BodyPublishers HttpResponse
                          HttpResponse$BodyHandlers)
           (java.time Duration)
           (java.util ArrayList Arrays)
           (java.util.concurrent CompletableFuture TimeUnit)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn h2-client ^H2Client [s] (H2Client/connect "127.0.0.1" (int (ts/port s))))

(defn- header-list ^ArrayList [m]
  (let [l (ArrayList.)]
    (doseq [[k v] m, v (if (sequential? v) v [v])] (.add l (into-array String [k v])))
    l))

(defn h2
  "Sends one request on a new stream of `c` and waits for the answer."
  (^H2Client$Response [c method path] (h2 c method path {} nil))
  (^H2Client$Response [^H2Client c method path headers ^bytes body]
   (.request c method path (header-list headers) body)))

(defn- GET ^H2Client$Response [c path] (h2 c "GET" path))

(defn- bytes-of ^bytes [^String s] (.getBytes s "UTF-8"))

(def ^:private seen (atom []))

(defn- recording [req]
  (swap! seen conj (cond-> req (:body req) (assoc :body-bytes (.readAllBytes ^InputStream (:body req))
                                                  :body-class (class (:body req)))))
  {:status 200 :headers {"Content-Type" "text/plain" "X-Reply" ["a" "b"]} :body "h2 ok"})

(deftest ^:integration prior-knowledge-request-map-and-response
  (reset! seen [])
  (with-server [s recording {}]
    (with-open [c (h2-client s)]
      (let [r (h2 c "POST" "/a/b?x=1" {"x-mixed" "v" "cookie" ["a=1" "b=2"]} (bytes-of "hello h2"))
            req (first @seen)]
        (is (= 200 (.status r)))
        (is (= "h2 ok" (.text r)))
        (is (= "text/plain" (.header r "content-type")))
        (is (= "a,b" (.header r "x-reply")) "a repeated response header is sent as two fields")
        (is (= "5" (.header r "content-length")))
        (is (= "herald" (.header r "server")))
        (is (some? (.header r "date")))
        (is (every? #(= % (str/lower-case %)) (keys (.headers r))))
        (is (= "HTTP/2.0" (:protocol req)))
        (is (= :post (:request-method req)))
        (is (= "/a/b" (:uri req)))
        (is (= "x=1" (:query-string req)))
        (is (= :http (:scheme req)))
        (is (= (ts/port s) (:server-port req)))
        (is (= "127.0.0.1" (:remote-addr req)))
        (is (= "127.0.0.1" (:server-name req)))
        (is (= "v" (get-in req [:headers "x-mixed"])))
        (is (= "a=1; b=2" (get-in req [:headers "cookie"])) "cookie crumbs joined as Ring wants")
        (is (= "127.0.0.1" (get-in req [:headers "host"])) ":authority becomes host")
        (is (not-any? #(str/starts-with? % ":") (keys (:headers req))) "no pseudo-headers in :headers")
        (is (Arrays/equals (bytes-of "hello h2") ^bytes (:body-bytes req)))
        (is (isa? (:body-class req) InputStream)))
      (testing "a GET without body has no :body and many streams share the connection"
        (reset! seen [])
        (let [fs (mapv (fn [i] (.send c "GET" (str "/n" i) (header-list {}) nil)) (range 50))
              rs (mapv #(.get ^CompletableFuture % 10 TimeUnit/SECONDS) fs)]
          (is (every? #(= 200 (.status ^H2Client$Response %)) rs))
          (is (= 50 (count @seen)))
          (is (not-any? #(contains? % :body) @seen)))))))

(defn jdk-client
  (^HttpClient [] (jdk-client nil))
  (^HttpClient [ssl]
   (cond-> (HttpClient/newBuilder)
     true (.version HttpClient$Version/HTTP_2)
     ssl (.sslContext ssl)
     true (.connectTimeout (Duration/ofSeconds 30))
     true (.build))))

(defn jdk-send ^HttpResponse [^HttpClient c ^String url ^bytes body]
  (let [b (-> (HttpRequest/newBuilder (URI. url)) (.timeout (Duration/ofSeconds 60)))]
    (.send c (.build (if body (.POST b (HttpRequest$BodyPublishers/ofByteArray body)) (.GET b)))
           (HttpResponse$BodyHandlers/ofString))))

(deftest ^:integration h2c-upgrade-with-the-jdk-client
  (reset! seen [])
  (with-server [s recording {}]
    (let [c (jdk-client)
          url (str "http://127.0.0.1:" (ts/port s))
          r1 (jdk-send c (str url "/first?u=1") nil)
          r2 (jdk-send c (str url "/second") (bytes-of "after upgrade"))]
      (is (= HttpClient$Version/HTTP_2 (.version r1)) "the upgrade request is answered on stream 1")
      (is (= "h2 ok" (.body r1)))
      (is (= HttpClient$Version/HTTP_2 (.version r2)))
      (is (= ["HTTP/2.0" "HTTP/2.0"] (map :protocol @seen)))
      (is (= ["/first" "/second"] (map :uri @seen)))
      (is (= "u=1" (:query-string (first @seen))))
      (is (not-any? #(contains? (:headers (first @seen)) %) ["upgrade" "http2-settings" "connection"]))
      (is (Arrays/equals (bytes-of "after upgrade") ^bytes (:body-bytes (second @seen)))))
    (testing "an upgrade request with a body is served over HTTP/1.1 (the server may ignore Upgrade)"
      (let [r (ts/request (ts/port s) (str "POST /b HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                                           "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
                                           "Content-Length: 3\r\n\r\nabc"))]
        (is (= 200 (:status r)))
        (is (= "HTTP/1.1" (:protocol (last @seen))))))
    (testing "a bad HTTP2-Settings header is no upgrade"
      (let [r (ts/request (ts/port s) (str "GET /b HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                                           "Upgrade: h2c\r\nHTTP2-Settings: AAM\r\n\r\n"))]
        (is (= 200 (:status r)))))))

(deftest ^:integration the-jdk-client-reads-an-answer-given-before-its-upload-ended
  ;; found with java.net.http.HttpClient over h2 (TLS): PUT of 5 MB to a handler that does not read it threw
  ;; "IOException: RST_STREAM received Stream cancelled"; the stream now ends with NO_ERROR (RFC 9113 8.1)
  (let [f (ts/tls-files)]
    (with-server [s (fn [req] (if (= "/small" (:uri req)) {:status 200 :body "read"} {:status 401 :body "no"}))
                  {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)} :max-body-bytes 1000000}]
      (let [c (jdk-client (ts/client-ssl-context))
            url (str "https://127.0.0.1:" (ts/port s))]
        (testing "a handler that answers without reading a streamed body"
          (let [r (jdk-send c (str url "/upload") (byte-array 900000))]
            (is (= HttpClient$Version/HTTP_2 (.version r)))
            (is (= [401 "no"] [(.statusCode r) (.body r)]))))
        (testing "a declared length over :max-body-bytes"
          (is (= 413 (.statusCode (jdk-send c (str url "/upload") (byte-array 5000000))))))
        (is (= "read" (.body (jdk-send c (str url "/small") nil))) "the connection lives on")))))

(deftest ^:integration h2-by-alpn-over-tls
  (reset! seen [])
  (let [f (ts/tls-files)]
    (with-server [s recording {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}]
      (let [url (str "https://127.0.0.1:" (ts/port s) "/tls")
            r (jdk-send (jdk-client (ts/client-ssl-context)) url (bytes-of "secret"))]
        (is (= HttpClient$Version/HTTP_2 (.version r)))
        (is (= "h2 ok" (.body r)))
        (is (= :https (:scheme (first @seen))))
        (is (= "HTTP/2.0" (:protocol (first @seen))))
        (is (Arrays/equals (bytes-of "secret") ^bytes (:body-bytes (first @seen)))))
      (testing "a client that offers only http/1.1 gets HTTP/1.1"
        (let [r (.send (ts/https-client) (.build (HttpRequest/newBuilder (URI. (str "https://127.0.0.1:" (ts/port s) "/"))))
                       (HttpResponse$BodyHandlers/ofString))]
          (is (= HttpClient$Version/HTTP_1_1 (.version r)))
          (is (= "HTTP/1.1" (:protocol (last @seen))))))
      (testing "file bodies go out over TLS on HTTP/2 too"
        (let [file (doto (File/createTempFile "herald-h2" ".txt") (.deleteOnExit) (spit (apply str (repeat 5000 "0123456789"))))]
          (with-server [s2 (fn [_] {:status 200 :body file}) {:ssl-context (ts/server-ssl-context)}]
            (let [r (jdk-send (jdk-client (ts/client-ssl-context)) (str "https://127.0.0.1:" (ts/port s2) "/f") nil)]
              (is (= HttpClient$Version/HTTP_2 (.version r)))
              (is (= 50000 (count (.body r))))
              (is (= "50000" (.orElse (.firstValue (.headers r) "content-length") nil))))))))))

(defrecord Words [ws])

(extend-protocol http/StreamableResponseBody
  Words
  (write-body-to-stream [body _ ^java.io.OutputStream out]
    (with-open [out out]
      (doseq [w (:ws body)] (.write out (bytes-of (str w " "))) (.flush out)))))

(defn- bodies [file closed]
  {"/string" {:status 200 :headers {"Content-Type" "text/plain; charset=ISO-8859-1"} :body "café"}
   "/bytes" {:status 201 :body (bytes-of "raw")}
   "/nil" {:status 204}
   "/nil-200" {:status 200 :body nil}
   "/file" {:status 200 :body file}
   "/empty-file" {:status 200 :body (doto (File/createTempFile "herald-h2" ".empty") (.deleteOnExit))}
   "/stream" (fn [] {:status 200 :body (proxy [ByteArrayInputStream] [(bytes-of "streamed")]
                                         (close [] (reset! closed true)))})
   "/big-stream" (fn [] {:status 200 :body (ByteArrayInputStream. (byte-array 300000 (byte 65)))})
   "/seq" {:status 200 :body (map identity ["a" 1 :k nil "z"])}
   "/custom" {:status 200 :body (->Words ["x" "y"])}
   "/length" (fn [] {:status 200 :headers {"Content-Length" "3"} :body (ByteArrayInputStream. (bytes-of "abc"))})
   "/conn" {:status 200 :headers {"Connection" "keep-alive" "Keep-Alive" "timeout=5" "Transfer-Encoding" "chunked"}
            :body "no connection fields"}
   "/bad" {:status 200 :body 42}
   "/ws" {:ring.websocket/listener {:on-open (fn [_])}}})

(deftest ^:integration body-types-head-and-modes
  (let [closed (atom false)
        file (doto (File/createTempFile "herald-h2" ".txt") (.deleteOnExit) (spit "file body"))
        routes (bodies file closed)
        h (fn [req] (let [r (routes (:uri req))] (if (fn? r) (r) r)))]
    (doseq [mode [:virtual-threads :worker-pool :event-loop]]
      (testing (str mode)
        (reset! closed false)
        (with-server [s h {:mode mode :error-logger (fn [_ _])}]
          (with-open [c (h2-client s)]
            (let [latin (GET c "/string")]
              (is (= [99 97 102 (unchecked-byte 0xe9)] (seq (.body latin))) "String encoded with its charset")
              (is (= "4" (.header latin "content-length")))
              (is (= [201 "raw"] [(.status (GET c "/bytes")) (.text (GET c "/bytes"))]))
              (is (= [204 ""] [(.status (GET c "/nil")) (.text (GET c "/nil"))]))
              (is (= "0" (.header (GET c "/nil-200") "content-length")))
              (is (= ["file body" "9"] [(.text (GET c "/file")) (.header (GET c "/file") "content-length")]))
              (is (= [200 "" "0"] (let [r (GET c "/empty-file")] [(.status r) (.text r) (.header r "content-length")])))
              (is (= "streamed" (.text (GET c "/stream"))))
              (is (true? @closed) "InputStream closed after writing")
              (is (= 300000 (count (.body (GET c "/big-stream")))) "a body larger than the stream window")
              (is (= "a1:kz" (.text (GET c "/seq"))))
              (is (nil? (.header (GET c "/seq") "transfer-encoding")) "no chunked framing on HTTP/2")
              (is (= "x y " (.text (GET c "/custom"))))
              (is (= ["abc" "3"] [(.text (GET c "/length")) (.header (GET c "/length") "content-length")]))
              (let [r (GET c "/conn")]
                (is (= "no connection fields" (.text r)))
                (is (not-any? #(contains? (.headers r) %) ["connection" "keep-alive" "transfer-encoding"])))
              (is (= 500 (.status (GET c "/bad"))))
              (is (= 400 (.status (GET c "/ws"))) "no WebSocket over HTTP/2")
              (let [r (h2 c "HEAD" "/string" {} nil)]
                (is (= [200 "" "4"] [(.status r) (.text r) (.header r "content-length")]) "HEAD: length, no body"))
              (let [r (h2 c "HEAD" "/stream" {} nil)]
                (is (= [200 ""] [(.status r) (.text r)]))))))))))

(deftest ^:integration async-handlers-over-h2
  (let [errors (atom [])]
    (with-server [s (fn [req respond raise]
                      (case (:uri req)
                        "/later" (future (Thread/sleep 20) (respond {:status 200 :body (str "later " (:protocol req))}))
                        "/raise" (future (raise (ex-info "boom" {})))
                        "/twice" (do (respond {:status 200 :body "first"}) (respond {:status 201 :body "second"}))))
                  {:async? true :error-logger (fn [t _] (swap! errors conj t))}]
      (with-open [c (h2-client s)]
        (is (= "later HTTP/2.0" (.text (h2 c "GET" "/later"))))
        (is (= 500 (.status (h2 c "GET" "/raise"))))
        (is (= "first" (.text (h2 c "GET" "/twice"))))
        (is (= ["boom"] (map ex-message @errors)))))))

(deftest ^:integration limits-per-stream
  (reset! seen [])
  (with-server [s recording {:max-body-bytes 100 :max-header-bytes 1024 :max-request-line-bytes 128
                             :http2-max-concurrent-streams 7}]
    (with-open [c (h2-client s)]
      (is (= 7 (.maxConcurrentStreams (.serverSettings c))) "the limit is announced in SETTINGS")
      (is (= 1024 (.maxHeaderListSize (.serverSettings c))))
      (testing "413 for a body over the limit, with or without content-length; the connection lives on"
        (is (= 413 (.status (h2 c "POST" "/big" {} (byte-array 101)))))
        (is (= 413 (.status (h2 c "POST" "/big" {"content-length" "5000"} (byte-array 5000)))))
        (is (= 413 (.status (h2 c "POST" "/big" {} (byte-array 70000)))) "larger than the stream's window")
        (is (empty? @seen) "the handler never ran")
        (is (= 200 (.status (h2 c "POST" "/ok" {} (byte-array 100)))))
        (is (.isOpen c)))
      (testing "414 for a long :path, 431 for a header list over the limit"
        (is (= 414 (.status (h2 c "GET" (str "/" (apply str (repeat 200 "p")))))))
        (let [r (h2 c "GET" "/h" {"x-big" (apply str (repeat 1100 "h"))} nil)]
          (is (= 431 (.status r)))
          (is (= "Request Header Fields Too Large: the request's header fields are larger than the server accepts"
                 (.text r)) "herald's answer, not Netty's bare status")
          (is (= "text/plain; charset=utf-8" (.header r "content-type"))))
        (is (.isOpen c))
        (is (= 200 (.status (h2 c "GET" "/after"))))))
    (testing "a header list far over the limit (Netty's HPACK decoder stops at 1.25x) still gets 431, then GOAWAY"
      (with-open [c (h2-client s)]
        (is (= 200 (.status (h2 c "GET" "/before"))))
        (let [r (h2 c "GET" "/h" {"x-big" (apply str (repeat 3000 "h"))} nil)]
          (is (= 431 (.status r)))
          (is (str/starts-with? (.text r) "Request Header Fields Too Large: ")))
        (is (ts/eventually #(some? (.goAwayLastStream c)) 30000) "GOAWAY")
        (is (ts/eventually #(not (.isOpen c)) 30000) "closed"))
      (testing "also when the block spans CONTINUATION frames, on the first stream"
        (with-open [c (h2-client s)]
          (is (= 431 (.status (h2 c "GET" "/h" {"x-big" (apply str (repeat 40000 "h"))} nil))))
          (is (ts/eventually #(some? (.goAwayLastStream c)) 30000) "GOAWAY"))))
    (is (= 3 (get-in (http/server-stats s) [:errors 431])) "every 431 is counted"))
  (testing "max-pending: 503 with Retry-After per stream"
    (let [gate (promise)]
      (with-server [s (fn [_] @gate {:status 200 :body "done"}) {:max-pending 2 :mode :worker-pool}]
        (with-open [c (h2-client s)]
          (let [slow (mapv (fn [_] (.send c "GET" "/slow" (header-list {}) nil)) (range 2))
                _ (Thread/sleep 200)
                r (h2 c "GET" "/more")]
            (is (= 503 (.status r)))
            (is (= "1" (.header r "retry-after")))
            (deliver gate true)
            (is (every? #(= 200 (.status ^H2Client$Response (.get ^CompletableFuture % 10 TimeUnit/SECONDS))) slow))))))))

(deftest ^:integration graceful-shutdown-sends-goaway-and-drains
  (let [started (promise)
        s (http/start-server (fn [_] (deliver started true) (Thread/sleep 500) {:status 200 :body "drained"})
                             {:port 0 :host "127.0.0.1" :shutdown-timeout-ms 5000})
        c (h2-client s)]
    (try
      (let [f (.send c "GET" "/slow" (header-list {}) nil)]
        (is (true? (deref started 30000 false)))
        (let [stopped (http/stop-server s)]
          (is (ts/eventually #(some? (.goAwayLastStream c))) "GOAWAY on the shutdown event")
          (is (= "drained" (.text ^H2Client$Response (.get f 10 TimeUnit/SECONDS))) "the open stream completes")
          (is (nil? (deref stopped 10000 :timeout)))
          (is (ts/eventually #(not (.isOpen c))) "the connection is closed once drained")))
      (finally (.close c) @(http/stop-server s)))))

(deftest ^:integration http2-off-keeps-http1-only
  (with-server [s recording {:http2? false}]
    (testing "the h2 preface is an HTTP/1.1 request with a bad version: 505"
      (is (= 505 (:status (ts/request (ts/port s) "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")))))
    (testing "Upgrade: h2c is ignored"
      (let [r (jdk-send (jdk-client) (str "http://127.0.0.1:" (ts/port s) "/") nil)]
        (is (= HttpClient$Version/HTTP_1_1 (.version r))))))
  (let [f (ts/tls-files)]
    (with-server [s recording {:http2? false :tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}]
      (is (= HttpClient$Version/HTTP_1_1
             (.version (jdk-send (jdk-client (ts/client-ssl-context)) (str "https://127.0.0.1:" (ts/port s) "/") nil)))))))

(deftest ^:integration h2c-preface-detection-edge-cases
  (with-server [s recording {:request-timeout-ms 300}]
    (testing "a plaintext HTTP/1.1 request still works when sent in tiny pieces"
      (let [c (ts/open (ts/port s))]
        (try (doseq [ch "GET / HTTP/1.1\r\nHost: x\r\n\r\n"] (ts/write! c (str ch)))
             (is (= 200 (:status (ts/read-response c))))
             (finally (ts/close! c)))))
    (testing "a connection that stops inside the preface is closed after the request timeout"
      (let [c (ts/open (ts/port s))]
        (try (ts/write! c "PRI * HTTP/2")
             (Thread/sleep 700)
             (is (ts/eof? c))
             (finally (ts/close! c)))))))

(deftest ^:integration idle-connections-close-busy-ones-do-not
  (with-server [s (fn [req] (when (= "/slow" (:uri req)) (Thread/sleep 700)) {:status 200 :body "ok"})
                {:idle-timeout-ms 300}]
    (with-open [c (h2-client s)]
      (is (= "ok" (.text (h2 c "GET" "/slow"))) "a stream running longer than the idle timeout is not cut")
      (is (.isOpen c))
      (is (ts/eventually #(not (.isOpen c)) 30000) "no open stream for the idle timeout: closed")
      (is (some? (.goAwayLastStream c)) "with GOAWAY"))))

(deftest ^:integration a-stalled-request-body-gets-408-on-its-stream
  (with-server [s recording {:request-timeout-ms 300}]
    (with-open [c (h2-client s)]
      (let [stalled (.sendHeadersOnly c "POST" "/upload")]
        (is (= "h2 ok" (.text (h2 c "GET" "/other"))) "other streams are served meanwhile")
        (is (= 408 (.status ^H2Client$Response (.get stalled 5 TimeUnit/SECONDS))))
        (is (.isOpen c) "only the stream is ended")))))

(deftest http2-options-are-validated
  (doseq [[k v] [[:http2? "yes"] [:http2-max-concurrent-streams 0] [:http2-max-concurrent-streams 1.5]]]
    (let [data (try (http/start-server (fn [_] {:status 200}) {:port 0 k v}) nil
                    (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= {:type :herald.http/invalid-option :key k :value v} data)))))
