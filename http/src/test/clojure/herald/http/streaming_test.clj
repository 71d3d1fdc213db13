(ns herald.http.streaming-test
  "Server-sent events through StreamableResponseBody in every handler mode: each flushed event reaches the client
  before the next one is written."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (java.io ByteArrayOutputStream InputStream OutputStream)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent LinkedBlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(def ^:private events 5)

(defrecord EventStream [^LinkedBlockingQueue acks]
  http/StreamableResponseBody
  (write-body-to-stream [_ _ out]
    ;; one event per flush; the next is written only once the client has read the previous one, so a stream
    ;; that buffered instead of sending on flush would stall the test
    (with-open [^OutputStream out out]
      (dotimes [i events]
        (.write out (.getBytes (str "id: " i "\ndata: event " i "\n\n") StandardCharsets/UTF_8))
        (.flush out)
        (when (< i (dec events))
          (when-not (.poll acks 5 TimeUnit/SECONDS)
            (throw (ex-info "the client did not read the event" {:event i}))))))))

(defn- sse-response [acks]
  {:status 200
   :headers {"Content-Type" "text/event-stream" "Cache-Control" "no-cache"}
   :body (->EventStream acks)})

(defn- read-line* ^String [^InputStream in]
  (let [out (ByteArrayOutputStream.)]
    (loop [prev -1]
      (let [b (.read in)]
        (cond (neg? b) (throw (ex-info "connection closed" {}))
              (and (= b 10) (= prev 13)) (let [s (.toString out "ISO-8859-1")] (subs s 0 (dec (count s))))
              :else (do (.write out b) (recur b)))))))

(defn- read-head
  "The status line and header lines (lowercase names) of a response."
  [^InputStream in]
  (let [status (read-line* in)]
    {:status status
     :headers (loop [hs {}]
                (let [l (read-line* in)]
                  (if (= "" l) hs
                      (let [i (.indexOf l ":")]
                        (recur (assoc hs (str/lower-case (subs l 0 i)) (str/trim (subs l (inc i)))))))))}))

(defn- read-chunk
  "The next chunk of a chunked body as a String; nil for the last (zero-size) chunk."
  [^InputStream in]
  (let [size (Long/parseLong (first (str/split (read-line* in) #";")) 16)]
    (if (zero? size)
      (do (read-line* in) nil)
      (let [b (.readNBytes in (int size))]
        (read-line* in)
        (String. b StandardCharsets/UTF_8)))))

(defn- check-stream
  "Reads `events` events one by one from `port`, acknowledging each, then a second request on the same connection."
  [port ^LinkedBlockingQueue acks]
  (let [c (ts/open port)
        in ^InputStream (:in c)]
    (try
      (ts/write! c (ts/request-text "GET" "/events"))
      (let [{:keys [status headers]} (read-head in)]
        (is (str/starts-with? status "HTTP/1.1 200"))
        (is (= "text/event-stream" (headers "content-type")))
        (is (= "chunked" (headers "transfer-encoding"))))
      (is (= (for [i (range events)] (str "id: " i "\ndata: event " i "\n\n"))
             (for [_ (range events)]
               (let [e (read-chunk in)] (.put acks :read) e)))
          "each event arrives as its own chunk, before the next is written")
      (is (nil? (read-chunk in)) "closing the stream ends the response")
      (ts/write! c (ts/request-text "GET" "/plain"))
      (is (= "after" (:body (ts/read-response c))) "the connection serves the next request")
      (finally (ts/close! c)))))

(deftest ^:integration server-sent-events-in-every-mode
  (doseq [mode [:virtual-threads :worker-pool :event-loop]
          async? [false true]]
    (testing (str mode (when async? " async"))
      (let [acks (LinkedBlockingQueue.)
            answer (fn [req] (if (= "/events" (:uri req)) (sse-response acks) {:status 200 :body "after"}))
            handler (if async? (fn [req respond _] (respond (answer req))) answer)]
        (with-server [s handler {:mode mode :async? async?}]
          (check-stream (ts/port s) acks))))))
