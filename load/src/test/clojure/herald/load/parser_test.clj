(ns herald.load.parser-test
  "The incremental response parser over every body framing, fed whole and byte by byte."
  (:require [clojure.test :refer [deftest is testing]])
  (:import (herald.load.client ResponseParser ResponseParser$Sink ResponseParser$ParseException)
           (io.netty.buffer ByteBuf ByteBufAllocator Unpooled)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- parse
  "Feeds `text` to a parser in pieces of `step` bytes; returns [[status body keep-alive] ...]."
  [text step & {:keys [head? close?]}]
  (let [out (atom [])
        p (ResponseParser. (reify ResponseParser$Sink
                             (onResponse [_ status body keep-alive]
                               (swap! out conj [status (some-> ^ByteBuf body (.toString StandardCharsets/UTF_8)) keep-alive])
                               (some-> ^ByteBuf body .release)))
                           true ByteBufAllocator/DEFAULT)
        bytes (.getBytes ^String text StandardCharsets/ISO_8859_1)]
    (.expectNoBody p (boolean head?))
    (doseq [i (range 0 (alength bytes) step)]
      (let [b (Unpooled/wrappedBuffer bytes (int i) (int (min step (- (alength bytes) i))))]
        (.feed p b)
        (.release b)))
    (when close? (.closed p))
    (.release p)
    @out))

(def two-responses
  (str "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX: y\r\n\r\nhello"
       "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno"))

(deftest framings
  (doseq [step [1 3 7 1000]]
    (testing (str "pieces of " step)
      (is (= [[200 "hello" true] [404 "no" true]] (parse two-responses step)))
      (is (= [[200 "Wikipedia" true]]
             (parse "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nT: 1\r\n\r\n" step)))
      (is (= [[200 "until close" false]] (parse "HTTP/1.1 200 OK\r\n\r\nuntil close" step :close? true)))
      (is (= [[200 "after continue" true]]
             (parse "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\nafter continue" step)))
      (is (= [[204 "" true] [200 "" false]]
             (parse "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" step)))
      (is (= [[200 "" true]] (parse "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n" step :head? true)))
      (is (= [[200 "x" false]] (parse "HTTP/1.0 200 OK\nContent-Length: 1\n\nx" step))))))

(deftest bad-responses-throw
  (is (thrown? ResponseParser$ParseException (parse "SSH-2.0-OpenSSH_9\r\n\r\n" 100)))
  (is (thrown? ResponseParser$ParseException (parse "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n" 100)))
  (is (thrown? ResponseParser$ParseException (parse "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" 100))))
