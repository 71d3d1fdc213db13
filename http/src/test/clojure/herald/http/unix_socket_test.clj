(ns herald.http.unix-socket-test
  "Serving on a Unix domain socket: real clients (a JDK SocketChannel, curl) over epoll and NIO; the socket file's life."
  (:require [clojure.java.shell :as shell]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts])
  (:import (java.io BufferedInputStream File)
           (java.net StandardProtocolFamily UnixDomainSocketAddress)
           (java.nio.channels Channels ServerSocketChannel SocketChannel)
           (java.nio.file Files LinkOption Path)
           (java.nio.file.attribute FileAttribute PosixFilePermissions)
           (java.util.concurrent TimeUnit TimeoutException)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- temp-dir ^Path [] (Files/createTempDirectory "herald-uds" (make-array FileAttribute 0)))

(defn- sock-path ^String [] (str (.resolve (temp-dir) "h.sock")))

(defn- exists? [^String p] (Files/exists (Path/of p (make-array String 0)) (make-array LinkOption 0)))

(defmacro ^:private with-uds
  "Like `ts/with-server` but with no TCP port unless `opts` names one."
  [[sym handler opts] & body]
  `(let [~sym (http/start-server ~handler ~opts)]
     (try ~@body
          (finally @(http/stop-server ~sym)))))

(defn- echo-handler
  "Answers with the request's address keys, so tests can check what a Unix socket request carries."
  [req]
  {:status 200 :headers {"Content-Type" "text/plain"}
   :body (pr-str (select-keys req [:remote-addr :server-name :server-port :scheme :protocol :uri]))})

(defn- uds-open
  "A JDK client connection to the Unix socket at `path`, with the streams `ts/read-response` reads."
  [^String path]
  (let [ch (SocketChannel/open StandardProtocolFamily/UNIX)]
    (.connect ch (UnixDomainSocketAddress/of path))
    {:channel ch :in (BufferedInputStream. (Channels/newInputStream ch)) :out (Channels/newOutputStream ch)}))

(defn- within
  "Runs `f` on another thread and returns its value, or fails the test after `ms` (a SocketChannel has no read timeout)."
  [ms f]
  (let [fut (future (f))]
    (try (.get ^java.util.concurrent.Future fut (long ms) TimeUnit/MILLISECONDS)
         (catch TimeoutException _ (future-cancel fut) (throw (ex-info "no answer in time" {:ms ms}))))))

(defn- uds-exchange
  "Writes `text` on a fresh connection to `path` and reads `n` responses."
  [path text n]
  (within 5000 #(let [c (uds-open path)]
                  (try (ts/write! c text)
                       (vec (repeatedly n (fn [] (ts/read-response c))))
                       (finally (.close ^SocketChannel (:channel c)))))))

(deftest http1-over-a-unix-socket-with-epoll-and-nio
  (doseq [transport [:auto :nio]]
    (testing (str "transport " transport)
      (let [path (sock-path)]
        (with-uds [s echo-handler {:unix-socket path :transport transport}]
          (is (exists? path))
          (is (= -1 (http/server-port s)) "socket only: no TCP port")
          (let [[r] (uds-exchange path (ts/request-text "GET" "/a" {"Host" "example.test:8443"}) 1)]
            (is (= 200 (:status r)))
            (is (= {:remote-addr "127.0.0.1" :server-name "example.test" :server-port 80 :scheme :http
                    :protocol "HTTP/1.1" :uri "/a"}
                   (read-string (:body r)))
                "the Host names the server; the port is http's default; the peer counts as this host"))
          (testing "HTTP/1.0 without Host: :server-name is localhost"
            (let [[r] (uds-exchange path "GET /b HTTP/1.0\r\n\r\n" 1)]
              (is (= {:remote-addr "127.0.0.1" :server-name "localhost" :server-port 80 :scheme :http
                      :protocol "HTTP/1.0" :uri "/b"}
                     (read-string (:body r))))))
          (testing "pipelined requests are answered in order on one connection"
            (let [rs (uds-exchange path (str (ts/request-text "GET" "/p1") (ts/request-text "GET" "/p2")
                                             (ts/request-text "POST" "/p3" {} "body"))
                                   3)]
              (is (= ["/p1" "/p2" "/p3"] (map #(:uri (read-string (:body %))) rs)))))
          (is (= (if (= :nio transport) "nio" "epoll") (:transport (http/server-stats s)))))
        (is (not (exists? path)) "stop removed the socket file")))))

(defn- h2-frame ^bytes [type flags stream ^bytes payload]
  (let [n (alength payload)]
    (byte-array (concat (map unchecked-byte [(bit-shift-right n 16) (bit-shift-right n 8) n type flags
                                             (bit-shift-right stream 24) (bit-shift-right stream 16)
                                             (bit-shift-right stream 8) stream])
                        payload))))

(defn- read-h2-frame
  "{:type :flags :stream :payload} from `in`."
  [^java.io.InputStream in]
  (let [^bytes h (.readNBytes in 9)
        u (fn [i] (bit-and (aget h i) 0xff))
        n (+ (bit-shift-left (u 0) 16) (bit-shift-left (u 1) 8) (u 2))]
    (when (< (alength h) 9) (throw (ex-info "connection closed" {})))
    {:type (u 3) :flags (u 4) :stream (bit-and (+ (bit-shift-left (u 5) 24) (bit-shift-left (u 6) 16)
                                                  (bit-shift-left (u 7) 8) (u 8)) 0x7fffffff)
     :payload (.readNBytes in (int n))}))

(deftest h2c-prior-knowledge-over-a-unix-socket
  (let [path (sock-path)]
    (with-uds [_ echo-handler {:unix-socket path}]
      (let [frames (within 5000 #(let [c (uds-open path)]
                                   (try (ts/write! c (byte-array (concat (.getBytes "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                                                                         (h2-frame 4 0 0 (byte-array 0))
                                                                         ;; HPACK static table: :method GET, :scheme http, :path /
                                                                         (h2-frame 1 5 1 (byte-array (map unchecked-byte [0x82 0x86 0x84]))))))
                                        (loop [acc []]
                                          (let [f (read-h2-frame (:in c)) acc (conj acc f)]
                                            (if (and (= 1 (:stream f)) (pos? (bit-and 1 (:flags f)))) acc (recur acc))))
                                        (finally (.close ^SocketChannel (:channel c))))))
            on-1 (filter #(= 1 (:stream %)) frames)]
        (is (= 4 (:type (first frames))) "the server's SETTINGS first")
        (is (= 0x88 (bit-and 0xff (aget ^bytes (:payload (first on-1)) 0))) ":status 200 (HPACK static index 8)")
        (is (= {:remote-addr "127.0.0.1" :server-name "localhost" :server-port 80 :scheme :http
                :protocol "HTTP/2.0" :uri "/"}
               (read-string (apply str (for [f on-1 :when (zero? (:type f))] (String. ^bytes (:payload f) "UTF-8"))))))))))

(deftest a-websocket-over-a-unix-socket
  (let [path (sock-path)
        ws (fn [_] {:ring.websocket/listener {:on-message (fn [sock m] (http/ws-send sock (str "echo " m)))}})]
    (with-uds [_ ws {:unix-socket path}]
      (let [[status frame]
            (within 5000 #(let [c (uds-open path)]
                            (try (ts/write! c (str "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                                                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                                   "Sec-WebSocket-Version: 13\r\n\r\n"))
                                 (let [r (ts/read-response c true)]
                                   ;; a masked text frame "hi" (mask 0 0 0 0 keeps the payload as is)
                                   (ts/write! c (byte-array (map unchecked-byte [0x81 0x82 0 0 0 0 (int \h) (int \i)])))
                                   (let [^java.io.InputStream in (:in c)
                                         b0 (.read in) n (bit-and (.read in) 0x7f)]
                                     [(:status r) [b0 (String. (.readNBytes in (int n)) "UTF-8")]]))
                                 (finally (.close ^SocketChannel (:channel c))))))]
        (is (= 101 status))
        (is (= [0x81 "echo hi"] frame) "a final unmasked text frame back")))))

(deftest tcp-and-a-unix-socket-side-by-side
  (let [path (sock-path)]
    (with-uds [s echo-handler {:unix-socket path :port 0 :host "127.0.0.1"}]
      (is (pos? (http/server-port s)))
      (is (= 200 (:status (ts/GET (http/server-port s) "/tcp"))))
      (is (= "127.0.0.1" (:remote-addr (read-string (:body (ts/GET (http/server-port s) "/tcp"))))))
      (is (= 200 (:status (first (uds-exchange path (ts/request-text "GET" "/uds") 1))))))
    (is (not (exists? path)))))

(deftest the-socket-file
  (testing "a stale socket from a crashed run is replaced"
    (let [path (sock-path)
          stale (ServerSocketChannel/open StandardProtocolFamily/UNIX)]
      (.bind stale (UnixDomainSocketAddress/of ^String path))
      (.close stale) ; the JDK leaves the file behind, as a killed process does
      (is (exists? path))
      (with-uds [_ echo-handler {:unix-socket path}]
        (is (= 200 (:status (first (uds-exchange path (ts/request-text "GET" "/") 1))))))))
  (testing "a live socket is refused and keeps serving"
    (let [path (sock-path)]
      (with-uds [_ echo-handler {:unix-socket path}]
        (let [e (try (http/start-server echo-handler {:unix-socket path}) nil (catch Exception e e))]
          (is (= {:type :herald.http/unix-socket-in-use :path path :live? true} (ex-data e)))
          (is (str/includes? (ex-message e) path)))
        (is (= 200 (:status (first (uds-exchange path (ts/request-text "GET" "/") 1))))))))
  (testing "a path that is not a socket is refused and left alone"
    (let [path (sock-path)]
      (spit path "precious")
      (let [e (try (http/start-server echo-handler {:unix-socket path}) nil (catch Exception e e))]
        (is (= {:type :herald.http/unix-socket-in-use :path path :live? false} (ex-data e))))
      (is (= "precious" (slurp path)))))
  (testing ":unix-socket-permissions sets the file's mode"
    (let [path (sock-path)]
      (with-uds [_ echo-handler {:unix-socket path :unix-socket-permissions "rw-------"}]
        (is (= "rw-------" (PosixFilePermissions/toString
                            (Files/getPosixFilePermissions (Path/of path (make-array String 0))
                                                           (make-array LinkOption 0))))))))
  (testing "a directory that does not exist is a bind failure naming the path"
    (let [path (str (temp-dir) "/no/such/dir/h.sock")
          e (try (http/start-server echo-handler {:unix-socket path}) nil (catch Exception e e))]
      (is (= :herald.http/bind-failed (:type (ex-data e))))
      (is (str/includes? (ex-message e) path)))))

(deftest invalid-socket-options
  (doseq [[opts k] [[{:unix-socket 42} :unix-socket]
                    [{:unix-socket ""} :unix-socket]
                    [{:unix-socket (apply str "/tmp/" (repeat 120 "x"))} :unix-socket]
                    [{:unix-socket "/tmp/x.sock" :unix-socket-permissions "rw-rw-rw"} :unix-socket-permissions]
                    [{:unix-socket "/tmp/x.sock" :unix-socket-permissions 0660} :unix-socket-permissions]
                    [{:transport :bsd} :transport]]]
    (let [data (try (http/start-server echo-handler opts) nil (catch Exception e (ex-data e)))]
      (is (= {:type :herald.http/invalid-option :key k} (select-keys data [:type :key])) (pr-str opts)))))

(deftest kqueue-where-it-is-missing-is-an-invalid-transport
  (when-not (re-find #"(?i)mac|bsd" (System/getProperty "os.name"))
    (let [data (try (http/start-server echo-handler {:port 0 :transport :kqueue}) nil
                    (catch Exception e (ex-data e)))]
      (is (= {:type :herald.http/invalid-option :key :transport :value :kqueue} data)))))

(def ^:private curl? (zero? (:exit (try (shell/sh "curl" "--version") (catch Exception _ {:exit 1})))))

(deftest curl-over-a-unix-socket
  (if-not curl?
    (clojure.test/do-report {:type :skip :message "curl-over-a-unix-socket: curl is not installed"})
    (let [path (sock-path)]
      (with-uds [_ echo-handler {:unix-socket path}]
        (testing "HTTP/1.1"
          (let [{:keys [exit out err]} (shell/sh "curl" "-sS" "--max-time" "5" "--unix-socket" path
                                                 "http://localhost/c1")]
            (is (zero? exit) err)
            (is (= {:remote-addr "127.0.0.1" :server-name "localhost" :server-port 80 :scheme :http
                    :protocol "HTTP/1.1" :uri "/c1"}
                   (read-string out)))))
        (testing "h2c with prior knowledge"
          (let [{:keys [exit out err]} (shell/sh "curl" "-sS" "--max-time" "5" "--http2-prior-knowledge"
                                                 "--unix-socket" path "http://localhost/c2")]
            (if (str/includes? (str err) "not support")
              (clojure.test/do-report {:type :skip :message "h2c over curl: this curl has no HTTP/2"})
              (do (is (zero? exit) err)
                  (is (= "HTTP/2.0" (:protocol (read-string out))))))))))))
