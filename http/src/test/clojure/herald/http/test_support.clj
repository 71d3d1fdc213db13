(ns herald.http.test-support
  "Test helpers for herald.http: with-server, a raw-socket HTTP/1.1 client, and Netty leak detection that fails tests."
  (:require [clojure.string :as str]
            [clojure.test :as t]
            [herald.http :as http])
  (:import (java.io BufferedInputStream ByteArrayOutputStream InputStream OutputStream)
           (java.net Socket SocketTimeoutException)
           (java.nio.charset StandardCharsets)
           (java.net.http HttpClient WebSocket WebSocket$Listener)
           (java.nio ByteBuffer)
           (java.time Duration)
           (java.util.concurrent LinkedBlockingQueue TimeUnit)
           (java.util.logging Handler Level LogRecord Logger)))

(set! *warn-on-reflection* true)

;; ---- leak detection: Netty reports leaks through java.util.logging (no slf4j on the test classpath) ----

(defonce ^:private leaks (atom []))

(defonce ^:private ^Logger leak-logger
  (let [l (Logger/getLogger "io.netty.util.ResourceLeakDetector")]
    (.addHandler l (proxy [Handler] []
                     (publish [^LogRecord r]
                       (let [m (str (.getMessage r))]
                         (when (str/includes? m "LEAK:") (swap! leaks conj m))))
                     (flush [])
                     (close [])))
    (.setLevel l Level/ALL)
    l))

(defn collect-leaks!
  "Runs the GC and allocates pooled buffers so Netty's detector reports what leaked; returns the reports so far."
  []
  (dotimes [_ 3]
    (System/gc)
    (Thread/sleep 50)
    (dotimes [_ 64]
      (.release (.directBuffer io.netty.buffer.PooledByteBufAllocator/DEFAULT 64))
      (.release (.buffer io.netty.buffer.UnpooledByteBufAllocator/DEFAULT 64))))
  @leaks)

(defn leak-fixture
  "A :once fixture: after the namespace's tests, asserts that Netty reported zero leaks."
  [f]
  (f)
  (t/testing "Netty's leak detector (PARANOID in tests) reported no leak"
    (t/is (empty? (collect-leaks!)))))

;; ---- servers ----

(defmacro with-server
  "Starts `handler` with `opts` on 127.0.0.1 and an ephemeral port, binds the server to `sym`, runs `body`, and
  stops the server (waiting for the stop to complete)."
  [[sym handler opts] & body]
  `(let [~sym (http/start-server ~handler (merge {:port 0 :host "127.0.0.1"} ~opts))]
     (try ~@body
          (finally @(http/stop-server ~sym)))))

(defn eventually
  "True as soon as `(f)` is, polling every 10 ms for up to `ms` (default 30,000: generous for a loaded 2-core CI
  machine, and no cost when `(f)` comes true sooner) milliseconds; false after that."
  ([f] (eventually f 30000))
  ([f ms] (loop [n (quot (long ms) 10)] (cond (f) true (zero? n) false :else (do (Thread/sleep 10) (recur (dec n)))))))

(defn port ^long [server] (http/server-port server))

(defn check-request-map
  "Asserts Ring's required keys and types (RING.md points 1-7) on request map `r` of a body-less GET /x to
  `server`, with `protocol` as the :protocol it must carry; one `is` per key so a failure names it."
  [r server protocol]
  (t/is (instance? Integer (:server-port r)))
  (t/is (= (port server) (:server-port r)))
  (t/is (string? (:server-name r)))
  (t/is (string? (:remote-addr r)))
  (t/is (= "/x" (:uri r)))
  (t/is (= :http (:scheme r)))
  (t/is (= :get (:request-method r)))
  (t/is (= protocol (:protocol r)))
  (t/is (map? (:headers r)))
  (t/is (not (contains? r :query-string)) "optional key absent, not nil")
  (t/is (nil? (:body r)) "no body without Content-Length, chunking or DATA frames"))

;; ---- a raw HTTP/1.1 client over a plain Socket: exact wire control for compliance tests ----

(defn open
  "A raw connection to 127.0.0.1:port: {:socket :in :out}; reads time out after `timeout-ms` (30000: a loaded 2-core
  CI machine answered a namespace's first request after more than 5 s; no test waits for this timeout to pass)."
  ([port] (open port 30000))
  ([port timeout-ms]
   (let [s (doto (Socket. "127.0.0.1" (int port)) (.setSoTimeout (int timeout-ms)) (.setTcpNoDelay true))]
     {:socket s :in (BufferedInputStream. (.getInputStream s)) :out (.getOutputStream s)})))

(defn close! [{:keys [^Socket socket]}] (.close socket))

(defn write!
  "Writes a String (UTF-8) or bytes to the connection."
  [{:keys [^OutputStream out]} x]
  (let [^bytes b (if (string? x) (.getBytes ^String x StandardCharsets/UTF_8) x)]
    (.write out b)
    (.flush out)))

(defn request-text
  "The text of a request: `(request-text \"GET\" \"/x\" {\"X-A\" \"1\"} \"body\")`; adds Host, and Content-Length
  when a body is given and no Transfer-Encoding header is. Header values may be vectors (repeated lines)."
  ([method uri] (request-text method uri {} nil))
  ([method uri headers] (request-text method uri headers nil))
  ([method uri headers body]
   (let [hs (cond-> (merge {"Host" "localhost"} headers)
              (and body (not (get headers "Transfer-Encoding")))
              (assoc "Content-Length" (str (count (.getBytes ^String body StandardCharsets/UTF_8)))))]
     (str method " " uri " HTTP/1.1\r\n"
          (apply str (for [[k v] hs, v (if (sequential? v) v [v])] (str k ": " v "\r\n")))
          "\r\n" body))))

(defn- read-line* ^String [^InputStream in]
  (let [out (ByteArrayOutputStream.)]
    (loop [prev -1]
      (let [b (.read in)]
        (cond (neg? b) (when (pos? (.size out)) (.toString out "ISO-8859-1"))
              (and (= b 10) (= prev 13)) (let [s (.toString out "ISO-8859-1")] (subs s 0 (dec (count s))))
              :else (do (.write out b) (recur b)))))))

(defn- read-n ^bytes [^InputStream in n]
  (let [b (.readNBytes in (int n))]
    (when (< (alength b) n) (throw (ex-info "connection closed mid-body" {:wanted n :got (alength b)})))
    b))

(defn- read-chunks [^InputStream in]
  (loop [chunks []]
    (let [size (Long/parseLong (first (str/split (read-line* in) #";")) 16)]
      (if (zero? size)
        (do (loop [] (when (seq (read-line* in)) (recur))) chunks)
        (let [c (read-n in size)] (read-line* in) (recur (conj chunks c)))))))

(defn read-response
  "Reads one response: {:status :headers (lowercase names; repeated -> vector) :lines [[name value]...] :body
  (String, UTF-8) :bytes :chunks (byte arrays, when chunked)}. With `head? true` reads no body. nil at EOF."
  ([conn] (read-response conn false))
  ([{:keys [^InputStream in]} head?]
   (when-let [status-line (read-line* in)]
     (let [lines (loop [acc []]
                   (let [l (read-line* in)]
                     (if (or (nil? l) (= "" l)) acc
                         (let [i (.indexOf l ":")] (recur (conj acc [(subs l 0 i) (str/trim (subs l (inc i)))]))))))
           headers (reduce (fn [m [k v]] (let [k (str/lower-case k)]
                                           (if-let [old (m k)] (assoc m k (if (vector? old) (conj old v) [old v]))
                                                   (assoc m k v))))
                           {} lines)
           status (Integer/parseInt (second (str/split status-line #" ")))
           chunked? (= "chunked" (some-> (headers "transfer-encoding") str/lower-case))
           no-body? (or head? (< status 200) (= status 204) (= status 304))
           chunks (when (and chunked? (not no-body?)) (read-chunks in))
           ^bytes bytes (cond no-body? (byte-array 0)
                              chunked? (let [o (ByteArrayOutputStream.)] (doseq [^bytes c chunks] (.write o c)) (.toByteArray o))
                              (headers "content-length") (read-n in (Long/parseLong (headers "content-length")))
                              :else (.readAllBytes in))]
       {:status status :status-line status-line :headers headers :lines lines :chunks chunks
        :bytes bytes :body (String. bytes StandardCharsets/UTF_8)}))))

(defn eof?
  "True when the server closed the connection (a read returns -1) within the socket's timeout."
  [{:keys [^InputStream in]}]
  (try (neg? (.read in)) (catch SocketTimeoutException _ false) (catch java.io.IOException _ true)))

(defn request
  "One request on a fresh connection: writes `text`, reads one response, closes."
  ([port text] (request port text false))
  ([port text head?]
   (let [c (open port)]
     (try (write! c text) (read-response c head?) (finally (close! c))))))

(defn GET
  "`(GET port \"/path\")` -> the response map of `read-response`."
  ([port uri] (GET port uri {}))
  ([port uri headers] (request port (request-text "GET" uri headers))))

;; ---- a WebSocket client (java.net.http) whose events land in a queue ----

(defn ws-connect
  "Opens a WebSocket to ws://127.0.0.1:port/path; returns {:ws WebSocket :events queue}. Events: a String per text
  message, a byte[] per binary message, :pong, [:ping bytes], [:close code reason], [:error throwable]."
  ([port path] (ws-connect port path {}))
  ([port path {:keys [subprotocols]}]
   (let [q (LinkedBlockingQueue.)
         text (StringBuilder.)
         listener (reify WebSocket$Listener
                    (onOpen [_ ws] (.request ws 1))
                    (onText [_ ws data last?]
                      (.append text data)
                      (when last? (.put q (str text)) (.setLength text 0))
                      (.request ws 1) nil)
                    (onBinary [_ ws data _last?]
                      (let [b (byte-array (.remaining data))] (.get data b) (.put q b))
                      (.request ws 1) nil)
                    (onPing [_ ws data]
                      (let [b (byte-array (.remaining data))] (.get data b) (.put q [:ping b]))
                      (.request ws 1) nil)
                    (onPong [_ ws _] (.put q :pong) (.request ws 1) nil)
                    (onClose [_ _ code reason] (.put q [:close code reason]) nil)
                    (onError [_ _ err] (.put q [:error err])))
         builder (-> (HttpClient/newHttpClient) .newWebSocketBuilder (.connectTimeout (Duration/ofSeconds 30)))
         builder (if (seq subprotocols)
                   (.subprotocols builder (first subprotocols) (into-array String (rest subprotocols)))
                   builder)
         ws (.join (.buildAsync builder (java.net.URI. (str "ws://127.0.0.1:" port path)) listener))]
     {:ws ws :events q})))

(defn ws-receive
  "The next event of the client (see `ws-connect`), or ::timeout after `ms` (5000)."
  ([client] (ws-receive client 5000))
  ([{:keys [^LinkedBlockingQueue events]} ms]
   (or (.poll events (long ms) TimeUnit/MILLISECONDS) ::timeout)))

(defn ws-send [{:keys [^WebSocket ws]} x]
  (.join (if (string? x) (.sendText ws ^String x true) (.sendBinary ws (ByteBuffer/wrap ^bytes x) true))))

(defn ws-ping [{:keys [^WebSocket ws]} ^String data]
  (.join (.sendPing ws (ByteBuffer/wrap (.getBytes data StandardCharsets/UTF_8)))))

(defn ws-close [{:keys [^WebSocket ws]} code]
  (.join (.sendClose ws (int code) "bye")))

;; ---- TLS: self-signed certificates made with the JDK's keytool, and HttpClients trusting them ----

(defn- keytool! [& args]
  (let [java-home (System/getProperty "java.home")
        p (-> (ProcessBuilder. ^java.util.List (into [(str java-home "/bin/keytool")] args))
              (.redirectErrorStream true)
              (.start))
        out (slurp (.getInputStream p))]
    (when-not (zero? (.waitFor p))
      (throw (ex-info (str "keytool failed: " out) {:args args})))))

(defn- pem ^String [^String kind ^bytes der]
  (str "-----BEGIN " kind "-----\n"
       (.encodeToString (java.util.Base64/getMimeEncoder 64 (.getBytes "\n" StandardCharsets/US_ASCII)) der)
       "\n-----END " kind "-----\n"))

(defn- key-pair!
  "A PKCS12 keystore `<name>.p12` in `dir` with a self-signed EC key for `cn` (SAN localhost and 127.0.0.1), plus
  `<name>.crt` and `<name>.key` (unencrypted PKCS#8) as PEM; returns their paths and the loaded KeyStore."
  [^java.io.File dir ^String name ^String cn]
  (let [p12 (java.io.File. dir (str name ".p12"))]
    (keytool! "-genkeypair" "-alias" name "-keyalg" "EC" "-groupname" "secp256r1" "-dname" (str "CN=" cn)
              "-ext" "san=dns:localhost,ip:127.0.0.1" "-validity" "2" "-keystore" (str p12)
              "-storetype" "PKCS12" "-storepass" "changeit" "-keypass" "changeit")
    (let [ks (doto (java.security.KeyStore/getInstance "PKCS12")
               (.load (java.io.FileInputStream. p12) (.toCharArray "changeit")))
          crt (java.io.File. dir (str name ".crt"))
          key (java.io.File. dir (str name ".key"))]
      (spit crt (pem "CERTIFICATE" (.getEncoded (.getCertificate ks name))))
      (spit key (pem "PRIVATE KEY" (.getEncoded (.getKey ks name (.toCharArray "changeit")))))
      {:keystore ks :p12 (str p12) :cert-file (str crt) :key-file (str key)
       :cert (.getCertificate ks name)})))

(defn- ssl-context-of
  "A TLS SSLContext with the key of `key-store` (or none) trusting the certificates of `trust-store` (or none)."
  ^javax.net.ssl.SSLContext [key-store trust-store]
  (let [kmf (when key-store
              (doto (javax.net.ssl.KeyManagerFactory/getInstance (javax.net.ssl.KeyManagerFactory/getDefaultAlgorithm))
                (.init ^java.security.KeyStore key-store (.toCharArray "changeit"))))
        tmf (when trust-store
              (doto (javax.net.ssl.TrustManagerFactory/getInstance (javax.net.ssl.TrustManagerFactory/getDefaultAlgorithm))
                (.init ^java.security.KeyStore trust-store)))]
    (doto (javax.net.ssl.SSLContext/getInstance "TLS")
      (.init (some-> kmf .getKeyManagers) (some-> tmf .getTrustManagers) nil))))

(defn- trust-store-of [certs]
  (let [ks (doto (java.security.KeyStore/getInstance "PKCS12") (.load nil nil))]
    (doseq [[i c] (map-indexed vector certs)]
      (.setCertificateEntry ks (str "c" i) c))
    ks))

(defonce ^{:doc "Made once per JVM: {:dir :server {...} :client {...}} (see key-pair!)."} ^:private pki
  (delay (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-tls"
                                                                     (make-array java.nio.file.attribute.FileAttribute 0)))]
           {:dir dir :server (key-pair! dir "server" "localhost") :client (key-pair! dir "client" "herald-client")})))

(defn tls-files
  "Paths of a self-signed server certificate and key and a client certificate and key (PEM):
  `{:cert-file :key-file :client-cert-file :client-key-file}`; the server's names localhost and 127.0.0.1."
  []
  (let [{:keys [server client]} @pki]
    {:cert-file (:cert-file server) :key-file (:key-file server)
     :client-cert-file (:cert-file client) :client-key-file (:key-file client)}))

(defn server-ssl-context
  "A javax.net.ssl.SSLContext holding the self-signed server key of `tls-files`."
  ^javax.net.ssl.SSLContext []
  (ssl-context-of (:keystore (:server @pki)) nil))

(defn client-ssl-context
  "A client SSLContext trusting the server certificate of `tls-files`; with `client-cert?` it also presents the
  client certificate."
  (^javax.net.ssl.SSLContext [] (client-ssl-context false))
  (^javax.net.ssl.SSLContext [client-cert?]
   (ssl-context-of (when client-cert? (:keystore (:client @pki))) (trust-store-of [(:cert (:server @pki))]))))

(defn https-client
  "A java.net.http.HttpClient trusting the test server certificate. Options: `:version` (:http1 default, :http2),
  `:client-cert?` (present the client certificate)."
  (^HttpClient [] (https-client {}))
  (^HttpClient [{:keys [version client-cert?]}]
   (-> (HttpClient/newBuilder)
       (.sslContext (client-ssl-context (boolean client-cert?)))
       (.version (if (= version :http2) java.net.http.HttpClient$Version/HTTP_2 java.net.http.HttpClient$Version/HTTP_1_1))
       (.connectTimeout (Duration/ofSeconds 30))
       (.build))))
