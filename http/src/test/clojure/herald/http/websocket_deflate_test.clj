(ns herald.http.websocket-deflate-test
  "permessage-deflate (RFC 7692) over real sockets: Netty's client with its compression handler in every execution
  mode (RSV1 checked on the wire), raw frames deflated by the JDK's zlib for the parameters, a deflate bomb."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.websocket DeflateClient)
           (java.io ByteArrayOutputStream InputStream)
           (java.net SocketTimeoutException)
           (java.nio ByteBuffer)
           (java.nio.charset StandardCharsets)
           (java.util Arrays)
           (java.util.zip Deflater Inflater)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private rsv1 4) ; Netty's WebSocketFrame.rsv(): RSV1 is 0b100

(defn- echo
  "A Ring handler whose WebSocket echoes every message back."
  [_]
  {:ring.websocket/listener
   {:on-message (fn [sock m] (http/ws-send sock (if (string? m) m (let [^ByteBuffer b m
                                                                       a (byte-array (.remaining b))]
                                                                   (.get b a) a))))}})

(def ^:private text (apply str (repeat 200 "herald compresses this line. ")))

(deftest ^:integration netty-client-negotiates-and-messages-round-trip-in-every-mode
  (doseq [[mode async?] [[:virtual-threads false] [:worker-pool false] [:event-loop false] [:virtual-threads true]]]
    (testing (str mode (when async? " async"))
      (with-server [s (if async? (fn [req respond _] (respond (echo req))) echo)
                    {:websocket-compression? true :mode mode :async? async?}]
        (with-open [c (DeflateClient. (ts/port s) "/" true)]
          (is (str/starts-with? (str (.extensions c)) "permessage-deflate"))
          (doseq [i (range 3)] (.sendText c (str i text)))
          (.sendBinary c (.getBytes ^String text StandardCharsets/UTF_8))
          (is (= (map #(str % text) (range 3)) (repeatedly 3 #(.receive c 5000))))
          (is (= text (String. ^bytes (.receive c 5000) StandardCharsets/UTF_8)))
          (is (= [rsv1 rsv1 rsv1 rsv1] (vec (.outboundRsv c))) "the client's frames went out compressed")
          (is (= [rsv1 rsv1 rsv1 rsv1] (vec (.inboundRsv c))) "the server's frames came in compressed"))))))

(deftest ^:integration compression-is-off-unless-enabled
  (with-server [s echo {}]
    (with-open [c (DeflateClient. (ts/port s) "/" true)]
      (is (nil? (.extensions c)) "the offer is declined: no Sec-WebSocket-Extensions")
      (.sendText c text)
      (is (= text (.receive c 5000)))
      (is (= [0] (vec (.inboundRsv c))) "an uncompressed frame"))))

;; ---- raw frames: the wire as RFC 7692 describes it, zlib from the JDK ----

(def ^:private tail (byte-array [0 0 -1 -1]))

(defn- deflate
  "`data` as one permessage-deflate payload: raw deflate, sync-flushed, the trailing 00 00 ff ff removed."
  ^bytes [^bytes data]
  (let [d (Deflater. Deflater/DEFAULT_COMPRESSION true)
        out (ByteArrayOutputStream.)
        buf (byte-array 65536)]
    (.setInput d data)
    (loop [] (let [n (.deflate d buf 0 (alength buf) Deflater/SYNC_FLUSH)]
               (.write out buf 0 n)
               (when (= n (alength buf)) (recur))))
    (.end d)
    (let [b (.toByteArray out)] (Arrays/copyOf b (- (alength b) 4)))))

(defn- inflate
  "A server payload inflated with `inflater` (one per connection with context takeover)."
  ^String [^Inflater inflater ^bytes payload]
  (.setInput inflater (byte-array (concat payload tail)))
  (let [out (ByteArrayOutputStream.) buf (byte-array 4096)]
    (loop [] (let [n (.inflate inflater buf)] (.write out buf 0 n) (when (pos? n) (recur))))
    (.toString out "UTF-8")))

(defn- frame
  "A masked client frame with `rsv` bits (RSV1 = 4) and opcode 1 (text) unless given."
  ^bytes [rsv ^bytes payload & {:keys [opcode] :or {opcode 1}}]
  (let [n (alength payload) mask [1 2 3 4]
        head (cond (< n 126) [(bit-or 0x80 (bit-shift-left rsv 4) opcode) (bit-or 0x80 n)]
                   (< n 65536) [(bit-or 0x80 (bit-shift-left rsv 4) opcode) (bit-or 0x80 126)
                                (bit-shift-right n 8) (bit-and n 0xff)]
                   :else (into [(bit-or 0x80 (bit-shift-left rsv 4) opcode) (bit-or 0x80 127)]
                               (for [i (range 7 -1 -1)] (bit-and (bit-shift-right n (* 8 i)) 0xff))))]
    (byte-array (map unchecked-byte (concat head mask (map-indexed (fn [i b] (bit-xor b (mask (mod i 4)))) payload))))))

(defn- read-frame
  "The server's next frame {:rsv1? :opcode :payload :code}, or :eof / :timeout."
  [{:keys [^InputStream in]}]
  (try (let [b0 (.read in)]
         (if (neg? b0) :eof
             (let [n (bit-and (.read in) 0x7f)
                   n (case n 126 (reduce (fn [a _] (+ (* a 256) (.read in))) 0 (range 2))
                           127 (reduce (fn [a _] (+ (* a 256) (.read in))) 0 (range 8)) n)
                   p (.readNBytes in (int n))]
               (cond-> {:rsv1? (bit-test b0 6) :opcode (bit-and b0 0x0f) :payload p}
                 (and (= 8 (bit-and b0 0x0f)) (>= (alength p) 2))
                 (assoc :code (bit-or (bit-shift-left (bit-and (aget p 0) 0xff) 8) (bit-and (aget p 1) 0xff)))))))
       (catch SocketTimeoutException _ :timeout)))

(defn- connect
  "A raw connection after the handshake offering `offer`: [conn, the Sec-WebSocket-Extensions answered]."
  [port offer]
  (let [c (ts/open port 6000)]
    (ts/write! c (str "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                      (when offer (str "Sec-WebSocket-Extensions: " offer "\r\n")) "\r\n"))
    (let [r (ts/read-response c true)]
      (is (= 101 (:status r)))
      [c (get-in r [:headers "sec-websocket-extensions"])])))

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(deftest ^:integration context-takeover-and-its-parameters
  (with-server [s echo {:websocket-compression? true}]
    (testing "a plain offer: the server keeps its window, so a repeated message comes back shorter"
      (let [[c ext] (connect (ts/port s) "permessage-deflate; client_max_window_bits")
            inflater (Inflater. true)]
        (is (= "permessage-deflate" ext))
        (ts/write! c (frame 4 (deflate (utf8 text))))
        (ts/write! c (frame 4 (deflate (utf8 text))))
        (let [f1 (read-frame c) f2 (read-frame c)]
          (is (and (:rsv1? f1) (:rsv1? f2)))
          (is (= text (inflate inflater (:payload f1))))
          (is (= text (inflate inflater (:payload f2))))
          (is (< (alength ^bytes (:payload f2)) (alength ^bytes (:payload f1)))
              "the second message refers back into the first"))
        (.end inflater)
        (ts/close! c)))
    (testing "server_no_context_takeover: every message inflates on its own"
      (let [[c ext] (connect (ts/port s) "permessage-deflate; server_no_context_takeover")]
        (is (= "permessage-deflate; server_no_context_takeover" ext))
        (dotimes [_ 2] (ts/write! c (frame 4 (deflate (utf8 text)))))
        (dotimes [_ 2]
          (let [f (read-frame c) fresh (Inflater. true)]
            (is (:rsv1? f))
            (is (= text (inflate fresh (:payload f))))
            (.end fresh)))
        (ts/close! c)))
    (testing "an uncompressed message is fine too (RSV1 clear)"
      (let [[c _] (connect (ts/port s) "permessage-deflate")]
        (ts/write! c (frame 0 (utf8 "plain")))
        (is (= "plain" (inflate (Inflater. true) (:payload (read-frame c)))))
        (ts/close! c)))
    (testing "an offer needing a smaller server window is declined, the first acceptable one wins"
      (let [[c ext] (connect (ts/port s) "permessage-deflate; server_max_window_bits=10")]
        (is (nil? ext))
        (ts/write! c (frame 0 (utf8 "plain")))
        (let [f (read-frame c)]
          (is (false? (:rsv1? f)))
          (is (= "plain" (String. ^bytes (:payload f) StandardCharsets/UTF_8))))
        (ts/close! c))
      (let [[c ext] (connect (ts/port s) "permessage-deflate; server_max_window_bits=10, permessage-deflate")]
        (is (= "permessage-deflate" ext))
        (ts/close! c)))
    (testing "server_max_window_bits=15 (the window herald uses) is accepted and answered (RFC 7692 7.1.2.1)"
      ;; python3 websockets with server_max_window_bits=15 got no compression: every such offer was declined
      (let [[c ext] (connect (ts/port s) "permessage-deflate; server_max_window_bits=15; server_no_context_takeover")]
        (is (= "permessage-deflate; server_no_context_takeover; server_max_window_bits=15" ext))
        (ts/write! c (frame 4 (deflate (utf8 text))))
        (let [f (read-frame c)]
          (is (:rsv1? f))
          (is (= text (inflate (Inflater. true) (:payload f)))))
        (ts/close! c)))
    (testing "RSV2 is never negotiated: close 1002"
      (let [[c _] (connect (ts/port s) "permessage-deflate")]
        (ts/write! c (frame 2 (utf8 "x")))
        (is (= 1002 (:code (read-frame c))))
        (ts/close! c)))))

(deftest ^:integration rsv1-without-the-extension-is-a-protocol-error
  (with-server [s echo {}]
    (let [[c ext] (connect (ts/port s) "permessage-deflate")]
      (is (nil? ext))
      (ts/write! c (frame 4 (deflate (utf8 text))))
      (is (= 1002 (:code (read-frame c))))
      (ts/close! c))))

(deftest ^:integration a-deflate-bomb-gets-1009-and-the-limit-counts-inflated-bytes
  (let [limit 65536
        errors (atom [])]
    (with-server [s (fn [_] {:ring.websocket/listener
                             {:on-message (fn [sock m] (http/ws-send sock (str "got " (count m))))
                              :on-error (fn [_ e] (swap! errors conj e))}})
                  {:websocket-compression? true :websocket-max-frame-bytes limit}]
      (testing "a message of exactly the limit once inflated passes, one byte more gets 1009"
        (let [[c _] (connect (ts/port s) "permessage-deflate")]
          (ts/write! c (frame 4 (deflate (utf8 (apply str (repeat limit "a"))))))
          (let [f (read-frame c)]
            (is (= [1 true] [(:opcode f) (:rsv1? f)]) (pr-str f))
            (is (= (str "got " limit) (inflate (Inflater. true) (:payload f)))))
          (ts/write! c (frame 4 (deflate (utf8 (apply str (repeat (inc limit) "a"))))))
          (is (= 1009 (:code (read-frame c))))
          (ts/close! c)))
      (testing "32 MiB of zeros in a 32 KiB frame: close 1009, nothing inflated past the limit"
        (let [bomb (deflate (byte-array (* 32 1024 1024)))
              [c _] (connect (ts/port s) "permessage-deflate")]
          (is (< (alength bomb) limit) "the compressed frame itself is within the limit")
          (ts/write! c (frame 4 bomb :opcode 2))
          (is (= 1009 (:code (read-frame c))))
          (ts/close! c)))
      (is (seq @errors) "the listener heard of it"))))

(deftest websocket-compression-option-is-a-boolean
  (is (= {:type :herald.http/invalid-option :key :websocket-compression? :value "yes"}
         (try (http/start-server echo {:port 0 :websocket-compression? "yes"}) nil (catch Exception e (ex-data e))))))
