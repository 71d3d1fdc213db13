(ns herald.http.tls-test
  "TLS (https): :tls PEM files and :ssl-context, :scheme :https, :ssl-client-cert, body types and limits over TLS."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (io.netty.handler.ssl ClientAuth SslContextBuilder)
           (java.io ByteArrayInputStream File IOException)
           (java.net URI)
           (java.net.http HttpClient HttpClient$Version HttpRequest HttpRequest$BodyPublishers HttpResponse
                          HttpResponse$BodyHandlers WebSocket WebSocket$Listener)
           (java.security.cert X509Certificate)
           (java.util Arrays)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- tls-opts
  ([] (tls-opts {}))
  ([extra] (let [f (ts/tls-files)] {:tls (merge {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)} extra)})))

(defn- send!
  (^HttpResponse [^HttpClient client port path] (send! client port path nil))
  (^HttpResponse [^HttpClient client port path ^bytes body]
   (let [b (-> (HttpRequest/newBuilder (URI. (str "https://127.0.0.1:" port path)))
               (.timeout (java.time.Duration/ofSeconds 60)))]
     (.send client (.build (if body (.POST b (HttpRequest$BodyPublishers/ofByteArray body)) (.GET b)))
            (HttpResponse$BodyHandlers/ofByteArray)))))

(defn- text ^String [^HttpResponse r] (String. ^bytes (.body r) "UTF-8"))

(def ^:private seen (atom nil))

(defn- recording [req]
  (reset! seen (cond-> req (:body req) (assoc :body-bytes (.readAllBytes ^java.io.InputStream (:body req)))))
  {:status 200 :headers {"content-type" "text/plain"} :body "secure"})

(deftest ^:integration pem-files-serve-https-with-ring-keys
  (with-server [s recording (tls-opts)]
    (let [r (send! (ts/https-client) (ts/port s) "/a/b?x=1")
          req @seen]
      (is (= 200 (.statusCode r)))
      (is (= "secure" (text r)))
      (is (= :https (:scheme req)))
      (is (= "HTTP/1.1" (:protocol req)))
      (is (= "/a/b" (:uri req)))
      (is (= "x=1" (:query-string req)))
      (is (= (ts/port s) (:server-port req)))
      (is (= "127.0.0.1" (:remote-addr req)))
      (is (not (contains? req :ssl-client-cert)) "no client certificate presented"))
    (testing "a POST body arrives whole over TLS"
      (let [body (.getBytes ^String (apply str (repeat 50000 "tls!")) "UTF-8")
            r (send! (ts/https-client) (ts/port s) "/post" body)]
        (is (= 200 (.statusCode r)))
        (is (Arrays/equals body ^bytes (:body-bytes @seen)))))
    (testing "a client asking for HTTP/2 gets it by ALPN (:http2? is on by default)"
      (let [r (send! (ts/https-client {:version :http2}) (ts/port s) "/")]
        (is (= "secure" (text r)))
        (is (= HttpClient$Version/HTTP_2 (.version r)))
        (is (= "HTTP/2.0" (:protocol @seen)))
        (is (= :https (:scheme @seen)))))))

(deftest ^:integration a-jdk-ssl-context-and-a-netty-ssl-context-both-work
  (with-server [s recording {:ssl-context (ts/server-ssl-context)}]
    (is (= "secure" (text (send! (ts/https-client) (ts/port s) "/"))))
    (is (= :https (:scheme @seen)))
    (testing "a JDK SSLContext asks for no client certificate"
      (is (= "secure" (text (send! (ts/https-client {:client-cert? true}) (ts/port s) "/"))))
      (is (not (contains? @seen :ssl-client-cert)))))
  (let [f (ts/tls-files)
        ctx (-> (SslContextBuilder/forServer (File. ^String (:cert-file f)) (File. ^String (:key-file f)))
                (.clientAuth ClientAuth/OPTIONAL)
                (.trustManager (File. ^String (:client-cert-file f)))
                (.build))]
    (with-server [s recording {:ssl-context ctx}]
      (is (= "secure" (text (send! (ts/https-client) (ts/port s) "/"))))
      (is (= :https (:scheme @seen)))
      (testing "a Netty SslContext asks for client certificates as it was built to"
        (is (= "secure" (text (send! (ts/https-client {:client-cert? true}) (ts/port s) "/"))))
        (is (instance? X509Certificate (:ssl-client-cert @seen)))))))

(defn- invalid-key [opts]
  (try (http/start-server identity (merge {:port 0 :host "127.0.0.1"} opts))
       nil
       (catch clojure.lang.ExceptionInfo e
         (is (= :herald.http/invalid-option (:type (ex-data e))))
         [(:key (ex-data e)) (ex-message e)])))

(defn- openssl-encrypt!
  "The PEM key `key-file` re-encrypted (PKCS#8, PBES2 AES-256) with `password` by the openssl CLI; nil without it."
  [^String key-file ^String password]
  (let [out (File/createTempFile "herald-enc" ".key")]
    (.deleteOnExit out)
    (try (let [args ["openssl" "pkcs8" "-topk8" "-v2" "aes-256-cbc" "-in" key-file "-out" (str out)
                     "-passout" (str "pass:" password)]
               p (.start (ProcessBuilder. ^"[Ljava.lang.String;" (into-array String args)))]
           (when (zero? (.waitFor p)) (str out)))
         (catch IOException _ nil))))

(deftest ^:integration an-encrypted-private-key-with-its-password
  (if-let [enc (openssl-encrypt! (:key-file (ts/tls-files)) "s3cret")]
    (do (with-server [s recording (tls-opts {:private-key-file enc :private-key-password "s3cret"})]
          (is (= "secure" (text (send! (ts/https-client) (ts/port s) "/")))))
        (let [[k msg] (invalid-key (tls-opts {:private-key-file enc :private-key-password "wrong-pw"}))]
          (is (= :tls k))
          (is (not (re-find #"wrong-pw" msg)))))
    (clojure.test/do-report {:type :skip :message "no openssl CLI to encrypt a private key"})))

(deftest ^:integration a-client-certificate-reaches-the-handler
  (let [f (ts/tls-files)]
    (with-server [s recording (tls-opts {:client-auth :optional :trust-cert-file (:client-cert-file f)})]
      (testing "presented: :ssl-client-cert is the client's X509Certificate"
        (is (= 200 (.statusCode (send! (ts/https-client {:client-cert? true}) (ts/port s) "/"))))
        (let [cert (:ssl-client-cert @seen)]
          (is (instance? X509Certificate cert))
          (is (= "CN=herald-client" (.getName (.getSubjectX500Principal ^X509Certificate cert))))))
      (testing "over HTTP/2 too: the streams of a connection share its TLS session"
        (let [r (send! (ts/https-client {:client-cert? true :version :http2}) (ts/port s) "/")]
          (is (= HttpClient$Version/HTTP_2 (.version r)))
          (is (= "HTTP/2.0" (:protocol @seen)))
          (is (instance? X509Certificate (:ssl-client-cert @seen)))))
      (testing "not presented with :optional: the key is absent"
        (is (= 200 (.statusCode (send! (ts/https-client) (ts/port s) "/"))))
        (is (not (contains? @seen :ssl-client-cert)))))
    (with-server [s recording (tls-opts {:client-auth :require :trust-cert-file (:client-cert-file f)})]
      (testing ":require refuses a client without a certificate"
        (reset! seen nil)
        (is (thrown? IOException (send! (ts/https-client) (ts/port s) "/")))
        (is (nil? @seen)))
      (is (= 200 (.statusCode (send! (ts/https-client {:client-cert? true}) (ts/port s) "/")))))))

(deftest ^:integration response-body-types-and-limits-over-tls
  (let [big (byte-array (* 300 1024) (byte 65))
        file (doto (File/createTempFile "herald-tls" ".bin") (.deleteOnExit))]
    (with-open [o (java.io.FileOutputStream. file)] (.write o big))
    (with-server [s (fn [{:keys [uri]}]
                      {:status 200
                       :body (case uri
                               "/file" file
                               "/stream" (ByteArrayInputStream. big)
                               "/seq" (list "a" "b" "c")
                               "/bytes" (.getBytes "bytes")
                               "/empty" nil)})
                  (assoc (tls-opts) :max-body-bytes 1000)]
      (let [c (ts/https-client)
            p (ts/port s)]
        (testing "a File body (no zero-copy through TLS) arrives intact"
          (let [r (send! c p "/file")]
            (is (= 200 (.statusCode r)))
            (is (Arrays/equals big ^bytes (.body r)))))
        (testing "InputStream, seq, byte[] and nil bodies"
          (is (Arrays/equals big ^bytes (.body (send! c p "/stream"))))
          (is (= "abc" (text (send! c p "/seq"))))
          (is (= "bytes" (text (send! c p "/bytes"))))
          (is (= "" (text (send! c p "/empty")))))
        (testing "the body limit answers 413 over TLS too"
          (is (= 413 (.statusCode (send! c p "/x" (byte-array 5000))))))
        (testing "a plaintext client gets no HTTP answer from the TLS port"
          (let [conn (ts/open p)]
            (try
              (ts/write! conn "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
              (let [in (.getInputStream ^java.net.Socket (:socket conn))
                    _ (.setSoTimeout ^java.net.Socket (:socket conn) 5000)
                    first-bytes (.readNBytes in 5)]
                (is (not= "HTTP/" (String. first-bytes "US-ASCII"))))
              (catch IOException _ (is true "the server closed the connection"))
              (finally (ts/close! conn)))))))))

(deftest ^:integration websockets-work-over-tls
  (let [got (promise)]
    (with-server [s (fn [_] {:ring.websocket/listener {:on-message (fn [sock m] (http/ws-send sock (str "echo:" m)))}})
                  (tls-opts)]
      (let [ws (.join (.buildAsync (.newWebSocketBuilder (ts/https-client))
                                   (URI. (str "wss://127.0.0.1:" (ts/port s) "/"))
                                   (reify WebSocket$Listener
                                     (onText [_ ws data _last]
                                       (deliver got (str data))
                                       (.request ws 1)
                                       nil))))]
        (.join (.sendText ^WebSocket ws "hi" true))
        (is (= "echo:hi" (deref got 30000 :timeout)))
        (.join (.sendClose ^WebSocket ws 1000 ""))))))

(deftest ^:integration connections-over-the-limit-are-closed-without-a-plaintext-answer
  (with-server [s recording (assoc (tls-opts) :max-connections 1)]
    (let [first-conn (ts/open (ts/port s))]
      (try
        (Thread/sleep 200) ; let the server accept the first connection
        (let [second-conn (ts/open (ts/port s))]
          (try (is (= -1 (.read ^java.io.InputStream (:in second-conn))) "closed, no bytes")
               (catch IOException _ (is true "reset"))
               (finally (ts/close! second-conn))))
        (finally (ts/close! first-conn))))))

(deftest ^:integration plaintext-servers-stay-http
  (with-server [s recording {}]
    (ts/GET (ts/port s) "/")
    (is (= :http (:scheme @seen)))
    (is (not (contains? @seen :ssl-client-cert)))))

(deftest tls-options-are-validated
  (let [f (ts/tls-files)]
    (is (= :tls (first (invalid-key {:tls {:cert-chain-file (:cert-file f)}}))))
    (is (= :tls (first (invalid-key {:tls (assoc (:tls (tls-opts)) :client-auth :sometimes)}))))
    (is (= :tls (first (invalid-key {:tls (assoc (:tls (tls-opts)) :bogus 1)}))))
    (is (= :tls (first (invalid-key {:tls {:cert-chain-file "/nonexistent.crt" :private-key-file "/nonexistent.key"}}))))
    (testing "a key password never appears in the error"
      (let [[k msg] (invalid-key {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)
                                        :private-key-password :xyzzy-secret}})]
        (is (= :tls k))
        (is (not (re-find #"xyzzy" msg)))))
    (is (= :tls (first (invalid-key (assoc (tls-opts) :ssl-context (ts/server-ssl-context))))))
    (is (= :ssl-context (first (invalid-key {:ssl-context "not a context"}))))
    (is (= :ssl-context (first (invalid-key {:ssl-context (.build (SslContextBuilder/forClient))}))))))
