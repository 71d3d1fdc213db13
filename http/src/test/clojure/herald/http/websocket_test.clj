(ns herald.http.websocket-test
  "WebSockets (Ring 1.11 listener API): order of events, binary, ping handling, server close, limits, Ring protocols."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- bytes-of ^bytes [^ByteBuffer b] (let [a (byte-array (.remaining b))] (.get (.duplicate b) a) a))

(deftest ^:integration many-messages-arrive-in-order-and-binary-echoes
  (let [got (atom [])
        closed (promise)]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-message (fn [sock m]
                                            (if (string? m)
                                              (swap! got conj m)
                                              (http/ws-send sock (bytes-of m))))
                              :on-close (fn [_ c _] (deliver closed c))}})
                  {}]
      (let [c (ts/ws-connect (ts/port s) "/")]
        (doseq [i (range 200)] (ts/ws-send c (str i)))
        (ts/ws-send c (.getBytes "bin" StandardCharsets/UTF_8))
        (is (= "bin" (String. ^bytes (ts/ws-receive c) StandardCharsets/UTF_8)))
        (is (= (map str (range 200)) @got))
        (ts/ws-close c 4000)
        (is (= 4000 (deref closed 30000 nil)))))))

(deftest ^:integration a-listener-with-on-ping-answers-pings-itself
  (let [pings (atom [])]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-ping (fn [sock data] (swap! pings conj (String. (bytes-of data)))
                                         (http/ws-pong sock (.getBytes "custom")))}})
                  {}]
      (let [c (ts/ws-connect (ts/port s) "/")]
        (ts/ws-ping c "hello")
        (is (= :pong (ts/ws-receive c)))
        (is (= ["hello"] @pings))))))

(deftest ^:integration server-side-close-and-open?
  (let [state (promise)]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-open (fn [sock] (http/ws-close sock 4001 "done"))
                              :on-close (fn [sock code _] (deliver state [(http/ws-open? sock) code]))}})
                  {}]
      (let [c (ts/ws-connect (ts/port s) "/")]
        (is (= [:close 4001 "done"] (ts/ws-receive c)))
        (is (= [false 4001] (deref state 30000 nil)))))))

(deftest ^:integration oversize-messages-close-the-socket
  (let [errors (atom [])]
    (with-server [s (fn [_] {:ring.websocket/listener {:on-error (fn [_ e] (swap! errors conj e))}})
                  {:websocket-max-frame-bytes 1000}]
      (let [c (ts/ws-connect (ts/port s) "/")]
        (try (ts/ws-send c (apply str (repeat 5000 "x"))) (catch Exception _))
        (let [ev (ts/ws-receive c)]
          (is (or (and (vector? ev) (= :close (first ev)) (= 1009 (second ev)))
                  (and (vector? ev) (= :error (first ev))))
              (pr-str ev)))))))

(deftest ^:integration a-listener-on-a-plain-request-is-a-400
  (with-server [s (fn [_] {:ring.websocket/listener {}}) {}]
    (is (= 400 (:status (ts/GET (ts/port s) "/"))))))

(deftest ^:integration upgrade-with-a-connection-token-list
  (with-server [s (fn [_] {:ring.websocket/listener {}}) {}]
    (let [c (ts/open (ts/port s))]
      (try (ts/write! c (ts/request-text "GET" "/" {"Connection" "keep-alive, Upgrade" "Upgrade" "WebSocket"
                                                    "Sec-WebSocket-Key" "dGhlIHNhbXBsZSBub25jZQ=="
                                                    "Sec-WebSocket-Version" "13"}))
           (let [r (ts/read-response c true)]
             (is (= 101 (:status r)))
             (is (= "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" ((:headers r) "sec-websocket-accept"))))
           (finally (ts/close! c))))))

(deftest ^:integration subprotocol-is-selected
  (with-server [s (fn [_] {:ring.websocket/listener {:on-open (fn [sock] (http/ws-send sock "hi"))}
                           :ring.websocket/protocol "chat.v2"})
                {}]
    (let [c (ts/ws-connect (ts/port s) "/" {:subprotocols ["chat.v2"]})]
      (is (= "chat.v2" (.getSubprotocol ^java.net.http.WebSocket (:ws c))))
      (is (= "hi" (ts/ws-receive c))))))

(defn- define-ring-protocols!
  "Declares ring.websocket.protocols as Ring 1.11 shapes it (ring-core 1.11 is not on this classpath), so the
  interop path (a Listener record, ring's Socket protocol on herald's socket) runs for real."
  []
  (when-not (find-ns 'ring.websocket.protocols)
    (binding [*ns* *ns*]
      (eval '(do (ns ring.websocket.protocols)
                 (defprotocol Listener
                   (on-open [l s]) (on-message [l s m]) (on-pong [l s d]) (on-error [l s e]) (on-close [l s c r]))
                 (defprotocol PingListener (on-ping [l s d]))
                 (defprotocol Socket (-open? [s]) (-send [s m]) (-ping [s d]) (-pong [s d]) (-close [s c r]))
                 (defprotocol AsyncSocket (-send-async [s m succeed fail])))))))

(deftest ^:integration ring-listener-protocol-and-socket-protocol
  (define-ring-protocols!)
  (let [events (atom [])
        send (ns-resolve 'ring.websocket.protocols '-send)
        listener-proto @(ns-resolve 'ring.websocket.protocols 'Listener)
        listener (reify)
        _ (extend (class listener) listener-proto
                  {:on-open (fn [_ s] (swap! events conj :open) (send s "from ring"))
                   :on-message (fn [_ _ m] (swap! events conj (str m)))
                   :on-pong (fn [_ _ _]) :on-error (fn [_ _ _])
                   :on-close (fn [_ _ c _] (swap! events conj c))})]
    (with-server [s (fn [_] {:ring.websocket/listener listener}) {}]
      (let [c (ts/ws-connect (ts/port s) "/")]
        (is (= "from ring" (ts/ws-receive c)) "ring's Socket protocol works on herald's socket")
        (ts/ws-send c "to ring")
        (ts/ws-close c 1000)
        (is (= [:close 1000 ""] (update (ts/ws-receive c) 2 str)))
        (Thread/sleep 200)
        (is (= [:open "to ring" 1000] @events))))))

(deftest ^:integration invalid-utf-8-text-fails-the-connection-with-1007
  (let [got (atom [])
        closed (promise)]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-message (fn [_ m] (swap! got conj m))
                              :on-close (fn [_ code _] (deliver closed code))}})
                  {}]
      (let [c (ts/open (ts/port s) 3000)
            frame (fn [^bytes payload]           ; a final, masked (zero mask) text frame
                    (byte-array (concat [(unchecked-byte 0x81) (unchecked-byte (bit-or 0x80 (alength payload))) 0 0 0 0]
                                        payload)))]
        (try
          (ts/write! c (str "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"))
          (is (= 101 (:status (ts/read-response c true))))
          (ts/write! c (frame (.getBytes "ok" StandardCharsets/UTF_8)))
          (ts/write! c (frame (byte-array [(unchecked-byte 0xC3) (unchecked-byte 0x28)])))
          (let [^java.io.InputStream in (:in c)
                b0 (.read in) len (.read in) code (bit-or (bit-shift-left (.read in) 8) (.read in))]
            (is (= [0x88 1007] [b0 code]) "a close frame with 1007 (RFC 6455 8.1)")
            (is (>= len 2)))
          (is (= 1007 (deref closed 30000 nil)) "the listener hears 1007")
          (is (= ["ok"] @got) "the invalid message is not delivered")
          (finally (ts/close! c)))))))
