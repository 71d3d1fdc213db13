(ns herald.http.websocket-close-test
  "The WebSocket close handshake over real sockets (RFC 6455 5.5, 7.1, 7.4): the client RECEIVES a close frame
  with the right code (1002, 1007, 1009, an echo of its own) and then an orderly end of stream, never a reset;
  the listener's :on-close reports the code that was sent. Raw frames for the protocol errors, the JDK client
  where it fits."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io InputStream)
           (java.net SocketException SocketTimeoutException)
           (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

;; ---- a raw WebSocket client: frames built and read byte by byte ----

(def ^:private mask-key [0x37 0xfa 0x21 0x3d])

(defn- frame
  "A client frame: `opcode`, `payload` (bytes or String); opts :fin? (true), :masked? (true), :rsv (0), :len (the
  announced length, default the payload's)."
  ^bytes [opcode payload & {:keys [fin? masked? rsv len] :or {fin? true masked? true rsv 0}}]
  (let [^bytes p (if (string? payload) (.getBytes ^String payload StandardCharsets/UTF_8) (or payload (byte-array 0)))
        n (long (or len (alength p)))
        b0 (bit-or (if fin? 0x80 0) (bit-shift-left rsv 4) opcode)
        m (if masked? 0x80 0)
        head (cond (< n 126) [b0 (bit-or m n)]
                   (< n 65536) [b0 (bit-or m 126) (bit-shift-right n 8) (bit-and n 0xff)]
                   :else (into [b0 (bit-or m 127)] (for [i (range 7 -1 -1)] (bit-and (bit-shift-right n (* 8 i)) 0xff))))
        body (if masked? (map-indexed (fn [i b] (bit-xor b (mask-key (mod i 4)))) p) (seq p))]
    (byte-array (map unchecked-byte (concat head (when masked? mask-key) body)))))

(defn- close-payload ^bytes [code ^String reason]
  (byte-array (concat [(unchecked-byte (bit-shift-right code 8)) (unchecked-byte (bit-and code 0xff))]
                      (.getBytes reason StandardCharsets/UTF_8))))

(defn- connect
  "A raw connection after the 101 handshake."
  [port]
  (let [c (ts/open port)]
    (ts/write! c (str "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
    (is (= 101 (:status (ts/read-response c true))))
    c))

(defn- read-frame
  "The server's next frame as {:opcode :payload (bytes) :code :reason}; :eof at an orderly end of stream,
  :reset on a TCP reset, :timeout."
  [{:keys [^InputStream in]}]
  (try
    (let [b0 (.read in)]
      (if (neg? b0)
        :eof
        (let [b1 (.read in)
              n (bit-and b1 0x7f)
              n (case n
                  126 (reduce (fn [a _] (+ (* a 256) (.read in))) 0 (range 2))
                  127 (reduce (fn [a _] (+ (* a 256) (.read in))) 0 (range 8))
                  n)
              p (.readNBytes in (int n))
              op (bit-and b0 0x0f)]
          (cond-> {:opcode op :fin? (bit-test b0 7) :masked? (bit-test b1 7) :payload p}
            (and (= op 8) (>= (alength p) 2))
            (assoc :code (bit-or (bit-shift-left (bit-and (aget p 0) 0xff) 8) (bit-and (aget p 1) 0xff))
                   :reason (String. p 2 (- (alength p) 2) StandardCharsets/UTF_8))))))
    (catch SocketTimeoutException _ :timeout)
    (catch SocketException _ :reset)))

(defn- close-then-eof
  "Reads what the server sends until the end: [the close code, what followed the close frame]."
  [c]
  (let [f (read-frame c)]
    [(if (map? f) (when (= 8 (:opcode f)) (:code f)) f)
     (when (map? f) (read-frame c))]))

(defn- recording-listener
  "A listener map recording every event in `events`; delivers [code reason] to `closed`."
  [events closed & {:as extra}]
  (merge {:on-open (fn [_] (swap! events conj :open))
          :on-message (fn [_ m] (swap! events conj [:message (if (string? m) m (.remaining ^ByteBuffer m))]))
          :on-pong (fn [_ _] (swap! events conj :pong))
          :on-error (fn [_ e] (swap! events conj [:error (class e)]))
          :on-close (fn [_ code reason] (swap! events conj [:close code]) (deliver closed [code reason]))}
         extra))

(defmacro ^:private with-ws-server
  "Runs body with `port` bound to a server whose WebSocket listener records into `events` / `closed`."
  [[port events closed opts & {:as extra}] & body]
  `(let [~events (atom []) ~closed (promise)]
     (with-server [s# (fn [_#] {:ring.websocket/listener (recording-listener ~events ~closed ~@(mapcat identity extra))})
                   ~opts]
       (let [~port (ts/port s#)] ~@body))))

;; After the server's close frame and its end of stream a client closes its socket too (RFC 6455 7.1.1). The tests
;; do so (hang-up!) before they wait for :on-close: the server reports the close once the TCP connection ends, and
;; with a client that keeps its socket open it would wait out its timer (about 2 s) first.
(defn- hang-up! [c] (ts/close! c))

(defn- code-of [closed] (first (deref closed 30000 [:no-on-close])))

;; ---- protocol errors: 1002, 1009, 1007 reach the client ----

(deftest ^:integration an-unmasked-client-frame-gets-close-1002
  (with-ws-server [port events closed {}]
    (let [c (connect port)]
      (try
        (ts/write! c (frame 1 "abc" :masked? false))
        (is (= [1002 :eof] (close-then-eof c)) "close 1002, then EOF (RFC 6455 5.1)")
        (hang-up! c)
        (is (= 1002 (code-of closed)) "on-close reports what the client received")
        (is (not-any? #(and (vector? %) (= :message (first %))) @events) "the frame is not delivered")
        (is (some #{[:error io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException]} @events))
        (finally (ts/close! c))))))

(deftest ^:integration an-oversized-frame-gets-close-1009-without-a-reset
  (testing "the QA repro: only a header announcing 1,100,000 bytes (default limit 1 MiB)"
    (with-ws-server [port _events closed {}]
      (let [c (connect port)]
        (try
          (ts/write! c (frame 1 nil :len 1100000))
          (is (= [1009 :eof] (close-then-eof c)))
          (hang-up! c)
          (is (= 1009 (code-of closed)))
          (finally (ts/close! c))))))
  (testing "the header and 600 KB of the payload: the input is drained, the client reads the close, not a reset"
    (with-ws-server [port _events closed {}]
      (let [c (connect port)
            sent (future (try (ts/write! c (byte-array (concat (frame 2 nil :len 1100000) (repeat 600000 (byte 7)))))
                              :sent
                              (catch Exception e e)))]
        (try
          (is (= [1009 :eof] (close-then-eof c)) "no TCP reset after the close frame")
          (is (= :sent (deref sent 30000 :blocked)) "the server kept reading what followed")
          (hang-up! c)
          (is (= 1009 (code-of closed)))
          (finally (ts/close! c)))))))

(deftest ^:integration a-fragmented-message-over-the-limit-gets-close-1009
  (with-ws-server [port events closed {:websocket-max-frame-bytes 1000}]
    (let [c (connect port)
          part (apply str (repeat 600 "x"))]
      (try
        (ts/write! c (frame 1 "small"))
        (ts/write! c (frame 1 part :fin? false))
        (ts/write! c (frame 0 part :fin? false))     ; 1200 bytes so far: each frame is under the limit
        (ts/write! c (frame 0 "end"))
        (ts/write! c (frame 1 "after"))
        (is (= [1009 :eof] (close-then-eof c)))
        (hang-up! c)
        (is (= 1009 (code-of closed)))
        (is (= [:open [:message "small"]] (take 2 @events)))
        (is (not-any? #{[:message "after"]} @events) "nothing after the failure is delivered")
        (finally (ts/close! c))))))

(deftest ^:integration bad-control-frames-and-opcodes-get-close-1002
  (with-ws-server [port _events closed {}]
    (doseq [[what bytes] [["a ping of 126 bytes" (frame 9 (byte-array 126))]
                          ["a close of 126 bytes" (frame 8 (byte-array 126))]
                          ["a fragmented ping" (frame 9 "p" :fin? false)]
                          ["a reserved opcode" (frame 3 "x")]
                          ["RSV bits without an extension" (frame 1 "x" :rsv 4)]
                          ["a continuation with no message" (frame 0 "x")]]]
      (testing what
        (let [c (connect port)]
          (try (ts/write! c bytes)
               (is (= [1002 :eof] (close-then-eof c)))
               (finally (ts/close! c))))))
    (is (= 1002 (code-of closed)))))

(deftest ^:integration invalid-utf-8-still-gets-close-1007
  (with-ws-server [port _events closed {}]
    (let [c (connect port)]
      (try (ts/write! c (frame 1 (byte-array (map unchecked-byte [0xc3 0x28]))))
           (is (= [1007 :eof] (close-then-eof c)))
           (hang-up! c)
           (is (= 1007 (code-of closed)))
           (finally (ts/close! c))))))

;; ---- close frames from the client ----

(deftest ^:integration bad-close-frames-get-close-1002-or-1007
  (with-ws-server [port _events _closed {}]
    (doseq [code [0 999 1004 1005 1006 1015 1016 2000 2999 5000 65535]]
      (testing (str "close code " code)
        (let [c (connect port)]
          (try (ts/write! c (frame 8 (close-payload code "")))
               (is (= [1002 :eof] (close-then-eof c)))
               (finally (ts/close! c))))))
    (testing "a 1-byte close payload"
      (let [c (connect port)]
        (try (ts/write! c (frame 8 (byte-array [3])))
             (is (= [1002 :eof] (close-then-eof c)))
             (finally (ts/close! c)))))
    (testing "a reason that is not UTF-8"
      (let [c (connect port)]
        (try (ts/write! c (frame 8 (byte-array (concat (close-payload 1000 "") (map unchecked-byte [0xc3 0x28])))))
             (is (= [1007 :eof] (close-then-eof c)))
             (finally (ts/close! c)))))))

(deftest ^:integration a-client-close-is-echoed-once-with-its-code
  (doseq [code [1000 1001 1003 1007 1011 1012 1014 3000 4999]]
    (testing (str "close " code)
      (with-ws-server [port _events closed {}]
        (let [c (connect port)]
          (try (ts/write! c (byte-array (concat (frame 8 (close-payload code "bye")) (frame 8 (close-payload 1000 "again")))))
               (is (= [code :eof] (close-then-eof c)) "one echo with the same code, then EOF")
               (hang-up! c)
               (is (= [code "bye"] (deref closed 30000 nil)))
               (finally (ts/close! c))))))))

(deftest ^:integration an-empty-client-close-is-echoed-empty-and-reports-1005
  (with-ws-server [port _events closed {}]
    (let [c (connect port)]
      (try (ts/write! c (frame 8 nil))
           (let [f (read-frame c)]
             (is (= [8 0] [(:opcode f) (alength ^bytes (:payload f))]) "an empty close answers an empty close"))
           (is (= :eof (read-frame c)))
           (hang-up! c)
           (is (= 1005 (code-of closed)) "1005: no status code was present (RFC 6455 7.1.5)")
           (finally (ts/close! c))))))

;; ---- a close the server starts ----

(defn- closing-listener [] {:on-message (fn [sock m] (when (= "close" m) (http/ws-close sock 4001 "done")))})

(deftest ^:integration a-server-close-waits-a-bounded-time-for-the-clients-close
  (testing "the client answers: the server closes the connection then, not at the end of its wait"
    ;; a wait of 10 minutes: a server that waited it out would leave the read below to time out (30 s), so the
    ;; answer is what closed the connection; no bound on how fast that was, which a loaded machine could break
    (with-ws-server [port _events closed {:websocket-close-wait-ms 600000} :on-message (:on-message (closing-listener))]
      (let [c (connect port)]
        (try (ts/write! c (frame 1 "close"))
             (let [f (read-frame c)]
               (is (= [4001 "done"] [(:code f) (:reason f)])))
             (ts/write! c (frame 8 (close-payload 4001 "")))
             (is (= :eof (read-frame c)) "the connection ends on the client's close")
             (is (= 4001 (code-of closed)) "on-close reports the code the server sent")
             (finally (ts/close! c))))))
  (testing "the client does not answer: the server closes after :websocket-close-wait-ms"
    (with-ws-server [port _events closed {:websocket-close-wait-ms 2000} :on-message (:on-message (closing-listener))]
      (let [c (connect port)]
        (try (ts/write! c (frame 1 "close"))
             (is (= 4001 (:code (read-frame c))))
             (let [t0 (System/nanoTime) end (read-frame c) ms (/ (- (System/nanoTime) t0) 1e6)]
               (is (= :eof end))
               ;; not before the 2 s wait (a timer never fires early; the margin is the close frame's way to the
               ;; client, and 1 s, the default, would fail); the upper bound only catches a close that never comes
               (is (< 1500 ms 30000) (str "closed " ms " ms after the close frame")))
             (is (= 4001 (code-of closed)))
             (finally (ts/close! c)))))))

(deftest ^:integration ping-and-pong-during-the-close-handshake
  (testing "a ping before the client's close is answered, then the close is echoed"
    (with-ws-server [port _events closed {}]
      (let [c (connect port)]
        (try (ts/write! c (byte-array (concat (frame 9 "p1") (frame 8 (close-payload 1000 "")))))
             (let [pong (read-frame c)]
               (is (= [10 "p1"] [(:opcode pong) (String. ^bytes (:payload pong) StandardCharsets/UTF_8)])))
             (is (= [1000 :eof] (close-then-eof c)))
             (hang-up! c)
             (is (= 1000 (code-of closed)))
             (finally (ts/close! c))))))
  (testing "after the server's close frame, nothing follows it: a ping gets no pong; a pong still reaches on-pong"
    (with-ws-server [port events closed {} :on-message (:on-message (closing-listener))]
      (let [c (connect port)]
        (try (ts/write! c (frame 1 "close"))
             (is (= 4001 (:code (read-frame c))))
             (ts/write! c (byte-array (concat (frame 9 "late ping") (frame 10 "late pong"))))
             (Thread/sleep 100)
             (ts/write! c (frame 8 (close-payload 1000 "")))
             (is (= :eof (read-frame c)) "no pong after the close frame (RFC 6455 5.5.1)")
             (is (= 4001 (code-of closed)))
             (is (some #{:pong} @events))
             (finally (ts/close! c)))))))

;; ---- the JDK's java.net.http.WebSocket client ----

(deftest ^:integration jdk-client-receives-1009-for-a-message-over-the-limit
  (doseq [[limit size] [[nil 1100000] [1000 5000]]]
    (testing (str "limit " (or limit "default") ", message of " size)
      (with-ws-server [port _events closed (if limit {:websocket-max-frame-bytes limit} {})]
        (let [c (ts/ws-connect port "/ws")]
          (try (ts/ws-send c (apply str (repeat size "x"))) (catch Exception _))
          (let [ev (ts/ws-receive c)]
            (is (and (vector? ev) (= [:close 1009] (subvec ev 0 2))) (pr-str ev)))
          (is (= 1009 (code-of closed))))))))

(deftest ^:integration jdk-client-close-is-echoed
  (with-ws-server [port _events closed {}]
    (let [c (ts/ws-connect port "/ws")]
      (ts/ws-close c 4000)
      (is (= [:close 4000] (subvec (ts/ws-receive c) 0 2)))
      (is (= [4000 "bye"] (deref closed 30000 nil))))))

(deftest ^:integration the-socket-refuses-close-codes-and-control-payloads-it-may-not-send
  (let [results (promise)]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-open (fn [sock]
                                         (let [try* (fn [f] (try (f) :ok (catch IllegalArgumentException _ :refused)))]
                                           (deliver results
                                                    {:1005 (try* #(http/ws-close sock 1005 ""))
                                                     :5000 (try* #(http/ws-close sock 5000 ""))
                                                     :long-reason (try* #(http/ws-close sock 1000 (apply str (repeat 124 "r"))))
                                                     :big-ping (try* #(http/ws-ping sock (byte-array 126)))
                                                     :open? (http/ws-open? sock)})
                                           (http/ws-send sock "still open")))}})
                  {}]
      (let [c (ts/ws-connect (ts/port s) "/ws")]
        (is (= "still open" (ts/ws-receive c)))
        (is (= {:1005 :refused :5000 :refused :long-reason :refused :big-ping :refused :open? true}
               (deref results 30000 nil)))))))

;; ---- over TLS (wss) ----

(defn- tls-opts [] (let [f (ts/tls-files)] {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}))

(defn- connect-tls
  "A raw TLS connection after the 101 handshake."
  [port]
  (let [s (doto ^javax.net.ssl.SSLSocket (.createSocket (.getSocketFactory (ts/client-ssl-context)) "127.0.0.1" (int port))
            (.setSoTimeout 6000))
        c {:socket s :in (java.io.BufferedInputStream. (.getInputStream s)) :out (.getOutputStream s)}]
    (ts/write! c (str "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
    (is (= 101 (:status (ts/read-response c true))))
    c))

(deftest ^:integration over-tls-the-client-reads-the-close-frame-and-an-orderly-end
  (with-ws-server [port _events closed (tls-opts)]
    (testing "an oversized frame with more payload following"
      (let [c (connect-tls port)
            sent (future (try (ts/write! c (byte-array (concat (frame 2 nil :len 1100000) (repeat 300000 (byte 7)))))
                              :sent
                              (catch Exception e e)))]
        (try
          (is (= [1009 :eof] (close-then-eof c)))
          (is (= :sent (deref sent 30000 :blocked)))
          (hang-up! c)
          (is (= 1009 (code-of closed)))
          (finally (ts/close! c))))))
  (with-ws-server [port _events closed (tls-opts)]
    (testing "a client close, echoed"
      (let [c (connect-tls port)]
        (try
          (ts/write! c (frame 8 (close-payload 1000 "bye")))
          (is (= [1000 :eof] (close-then-eof c)))
          (hang-up! c)
          (is (= [1000 "bye"] (deref closed 30000 nil)))
          (finally (ts/close! c)))))))

;; ---- the handshake itself ----

(deftest ^:integration an-upgrade-without-a-version-is-400-and-version-13-works
  (with-server [s (fn [_] {:ring.websocket/listener {}}) {}]
    ;; RFC 6455 4.2.2: a version the server does not speak gets 426 naming the one it does
    (doseq [[version status] [[nil 400] ["13" 101] ["14" 426] ["x" 426]]]
      (let [c (ts/open (ts/port s))]
        (try (ts/write! c (str "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                               (when version (str "Sec-WebSocket-Version: " version "\r\n")) "\r\n"))
             (let [r (ts/read-response c true)]
               (is (= status (:status r)) (str "version " (pr-str version)))
               (when (= 426 status)
                 (is (= "13" (get-in r [:headers "sec-websocket-version"])) (str "version " (pr-str version)))))
             (finally (ts/close! c)))))))
