(ns herald.http.http2-conformance-test
  "HTTP/2 protocol errors answered as RFC 9113 says, over raw frames (RawFrames): stream errors reset the stream
  with their own code, connection errors send GOAWAY with theirs and are read by the client on h2c too, malformed
  requests never reach the handler. Then h2spec against a server, h2c and TLS, when an h2spec binary is found
  (env H2SPEC, PATH, ~/.cache/herald/bin/h2spec where `make test`'s build/test-deps.sh builds it, /tmp/qa-go/bin/h2spec):
  zero failures but the allow-listed ones, else reported as skipped."
  (:require [clojure.java.io :as io]
            [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.http2 RawFrames RawFrames$Frame)
           (io.netty.handler.codec.http2 Http2Headers)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private PROTOCOL_ERROR 1)
(def ^:private FLOW_CONTROL_ERROR 3)
(def ^:private STREAM_CLOSED 5)
(def ^:private FRAME_SIZE_ERROR 6)

(defn- counting []
  (let [calls (atom [])]
    [calls (fn [req] (swap! calls conj (:uri req)) {:status 200 :body "ok"})]))

(defn- connect ^RawFrames [s] (RawFrames/connect (int (ts/port s))))

(defn- get-req ^Http2Headers [path] (RawFrames/get path))

(defn- await-frame [^RawFrames c type] (.await c (int type)))

(defn- rst? [^RawFrames$Frame f stream code]
  (and f (= RawFrames/RST_STREAM (.type f)) (= stream (.stream f)) (= code (.code f))))

(defn- goaway? [^RawFrames$Frame f code]
  (and f (= RawFrames/GOAWAY (.type f)) (= code (.code f))))

(defn- await-end
  "Reads until the response on `stream` ends (a frame with END_STREAM), true if it did."
  [^RawFrames c stream]
  (loop []
    (when-let [f (.next c)]
      (cond (and (= stream (.stream f)) (#{RawFrames/DATA RawFrames/HEADERS} (.type f)) (odd? (.flags f))) true
            (= RawFrames/CLOSED (.type f)) false
            :else (recur)))))

(defn- frame ^bytes [type flags stream payload]
  (RawFrames/frame (int type) (int flags) (int stream) (byte-array payload)))

(deftest ^:integration stream-errors-reset-the-stream-with-their-code
  (let [[calls h] (counting)]
    (with-server [s h {}]
      (testing "PRIORITY of 4 octets (6.3): FRAME_SIZE_ERROR"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/p") false)
          (.raw c (frame 2 0 1 [0 0 0 0]))
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 FRAME_SIZE_ERROR))))
      (testing "WINDOW_UPDATE of 0 on a stream (6.9): PROTOCOL_ERROR"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/w") false)
          (.windowUpdate c 1 0)
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR))))
      (testing "a second HEADERS without END_STREAM (8.1): PROTOCOL_ERROR"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/h") false)
          (.headers c 1 (RawFrames/with (io.netty.handler.codec.http2.DefaultHttp2Headers.) "x-trailer" "1") false)
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR))))
      (testing "a pseudo-header in trailers (8.1.2.1): PROTOCOL_ERROR"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/t") false)
          (.data c 1 (.getBytes "body") false)
          (.headers c 1 (RawFrames/with (io.netty.handler.codec.http2.DefaultHttp2Headers.) ":method" "GET") true)
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR))))
      (testing "a stream window above 2^31-1 (6.9.1): FLOW_CONTROL_ERROR on the stream"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/wf") false)
          (.windowUpdate c 1 0x7fffffff)
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 FLOW_CONTROL_ERROR))))
      (testing "content-length other than the DATA received (8.1.2.6): PROTOCOL_ERROR"
        (with-open [c (connect s)]
          (.headers c 1 (RawFrames/with (get-req "/cl") "content-length" "10") false)
          (.data c 1 (.getBytes "abcd") true)
          (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR))))
      (testing "DATA after the client's END_STREAM (5.1): STREAM_CLOSED, on the stream or the connection"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/d") true)
          (.data c 1 (.getBytes "late") true)
          (let [f (await-frame c RawFrames/RST_STREAM)]
            (is (or (rst? f 1 STREAM_CLOSED) (goaway? f STREAM_CLOSED)) (str f)))))
      (testing "HEADERS on a half-closed (remote) stream (5.1): STREAM_CLOSED"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/hc") true)
          (.headers c 1 (get-req "/hc") true)
          (let [f (await-frame c RawFrames/RST_STREAM)]
            (is (or (rst? f 1 STREAM_CLOSED) (goaway? f STREAM_CLOSED)) (str f))))))))

(deftest ^:integration malformed-requests-are-reset-before-the-handler
  (let [[calls h] (counting)]
    (with-server [s h {}]
      (doseq [[what headers] [["no :scheme" (doto (get-req "/a") (.remove ":scheme"))]
                              ["no :method" (doto (get-req "/b") (.remove ":method"))]
                              ["no :path" (get-req nil)]
                              [":path without a slash" (get-req "x")]
                              [":path *  on GET" (get-req "*")]]]
        (testing what
          (with-open [c (connect s)]
            (.headers c 1 headers true)
            (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR)))))
      (testing "OPTIONS * is well-formed"
        (with-open [c (connect s)]
          (.headers c 1 (doto (get-req "*") (.method "OPTIONS")) true)
          (is (await-end c 1))))
      (is (= ["*"] @calls) "only the well-formed request reached the handler"))))

(deftest ^:integration connection-errors-send-goaway-with-their-code
  (let [[calls h] (counting)]
    (with-server [s h {}]
      (testing "HEADERS on a stream the client ended and the server closed (5.1): STREAM_CLOSED"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/1") true)
          (is (await-end c 1))
          (.headers c 1 (get-req "/1") true)
          (is (goaway? (await-frame c RawFrames/GOAWAY) STREAM_CLOSED))))
      (testing "a stream id below one already opened (5.1.1): PROTOCOL_ERROR"
        (with-open [c (connect s)]
          (.headers c 5 (get-req "/5") true)
          (is (await-end c 5))
          (.headers c 3 (get-req "/3") true)
          (is (goaway? (await-frame c RawFrames/GOAWAY) PROTOCOL_ERROR))))
      (testing "the connection window above 2^31-1 (6.9.1): FLOW_CONTROL_ERROR"
        (with-open [c (connect s)]
          (.windowUpdate c 0 0x7fffffff)
          (is (goaway? (await-frame c RawFrames/GOAWAY) FLOW_CONTROL_ERROR))))
      (testing "h2c: a frame over SETTINGS_MAX_FRAME_SIZE with its payload unread: the GOAWAY is read, then the end"
        (with-open [c (connect s)]
          (.headers c 1 (get-req "/big") false)
          (.raw c (frame 0 0 1 (repeat 16385 0)))
          (is (goaway? (await-frame c RawFrames/GOAWAY) FRAME_SIZE_ERROR))
          (is (= RawFrames/CLOSED (.type ^RawFrames$Frame (await-frame c RawFrames/GOAWAY))) "a FIN, not a reset"))))))

(deftest ^:integration frames-for-a-stream-the-server-reset-do-not-end-the-connection
  (let [[calls h] (counting)]
    (with-server [s h {}]
      (with-open [c (connect s)]
        (.headers c 1 (get-req "x") false)
        (is (rst? (await-frame c RawFrames/RST_STREAM) 1 PROTOCOL_ERROR))
        (.data c 1 (.getBytes "sent before the reset was seen") true)
        (.headers c 3 (get-req "/after") true)
        (is (await-end c 3) "stream 3 is answered: the late DATA was no connection error")
        (is (= ["/after"] @calls))))))

;; ---- h2spec ----

(def ^:private allowed-failures
  "h2spec cases allowed to fail, by transport, with the reason."
  {:h2c {"Sends invalid connection preface"
         (str "3.5/2 sends \"INVALID CONNECTION PREFACE\\r\\n\\r\\n\" and expects GOAWAY or a close. On a plaintext port "
              "that serves HTTP/1.1 and h2c alike this is an HTTP/1.1 request, and herald answers it 400 as HTTP/1.1 "
              "must; over TLS (ALPN h2) the case passes.")}})

(defn- h2spec-binary []
  (->> [(System/getenv "H2SPEC")
        (some (fn [dir] (let [f (io/file dir "h2spec")] (when (.canExecute f) (str f))))
              (str/split (or (System/getenv "PATH") "") #":"))
        (str (System/getProperty "user.home") "/.cache/herald/bin/h2spec")
        "/tmp/qa-go/bin/h2spec"]
       (filter #(and % (.canExecute (io/file ^String %))))
       first))

(defn- h2spec-failures
  "Runs h2spec on `port`; returns {:summary line :failed #{descriptions}}."
  [bin port tls?]
  (let [args (cond-> [bin "-h" "127.0.0.1" "-p" (str port) "-P" "/" "-o" "5"] tls? (conj "-t" "-k"))
        {:keys [out]} (apply sh/sh args)
        failures (second (str/split out #"(?m)^Failures:" 2))]
    {:summary (or (re-find #"\d+ tests, \d+ passed, \d+ skipped, \d+ failed" out) out)
     :failed (set (map second (re-seq #"(?m)^\s*× \d+: (.*)$" (or failures ""))))
     :out out}))

(deftest ^:integration h2spec-finds-no-violation
  (if-let [bin (h2spec-binary)]
    (let [f (ts/tls-files)
          [_ h] (counting)]
      (with-server [plain h {}]
        (with-server [tls h {:tls {:cert-chain-file (:cert-file f) :private-key-file (:key-file f)}}]
          (doseq [[transport s tls?] [[:h2c plain false] [:h2 tls true]]]
            (testing (str "h2spec over " (name transport))
              (let [{:keys [summary failed out]} (h2spec-failures bin (ts/port s) tls?)
                    unexpected (remove (set (keys (allowed-failures transport))) failed)]
                (is (re-find #"\d+ tests" summary) out)
                (is (empty? unexpected) (str summary "; failed: " (vec unexpected)))))))))
    (clojure.test/do-report {:type :skip
                             :message "h2spec is not installed (set H2SPEC, put it on PATH or at ~/.cache/herald/bin/h2spec: build/test-deps.sh builds it with Go)"})))
