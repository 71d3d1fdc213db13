(ns herald.feed.forms
  "Strict UTF-8 for form-encoded bodies: herald.http decodes a form leniently (an invalid byte sequence becomes
  U+FFFD, as browsers do); the feed stores only the text a client meant, so a key or value whose percent-decoded
  bytes are not UTF-8 is a 400 naming the field."
  (:require [herald.feed.errors :as err])
  (:import (java.io ByteArrayOutputStream InputStream)
           (java.nio ByteBuffer)
           (java.nio.charset CharacterCodingException CodingErrorAction StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- hex ^long [b]
  (let [c (char (bit-and (long b) 0xff))]
    (Character/digit c 16)))

(defn- percent-decode
  "The bytes of the urlencoded text bs[from, to): `+` is a space, `%XX` a byte, anything else itself (a malformed
  escape is kept literally, as herald.http does)."
  ^bytes [^bytes bs ^long from ^long to]
  (let [out (ByteArrayOutputStream. (- to from))]
    (loop [i from]
      (when (< i to)
        (let [b (aget bs i)]
          (cond (= b (byte 43)) (do (.write out 32) (recur (inc i)))
                (and (= b (byte 37)) (< (+ i 2) to) (>= (hex (aget bs (inc i))) 0) (>= (hex (aget bs (+ i 2))) 0))
                (do (.write out (int (+ (* 16 (hex (aget bs (inc i)))) (hex (aget bs (+ i 2)))))) (recur (+ i 3)))
                :else (do (.write out (int b)) (recur (inc i)))))))
    (.toByteArray out)))

(defn- utf8
  "The text of `bs` when it is valid UTF-8, else nil."
  [^bytes bs]
  (try (str (.decode (doto (.newDecoder StandardCharsets/UTF_8)
                       (.onMalformedInput CodingErrorAction/REPORT)
                       (.onUnmappableCharacter CodingErrorAction/REPORT))
                     (ByteBuffer/wrap bs)))
       (catch CharacterCodingException _ nil)))

(defn- lenient ^String [^bytes bs] (String. bs StandardCharsets/UTF_8))

(defn- utf8-charset?
  "True when the request's Content-Type names no charset, or UTF-8."
  [req]
  (let [cs (some->> (get-in req [:headers "content-type"]) (re-find #"(?i);\s*charset=\"?([^\s;\"]+)") second)]
    (or (nil? cs) (#{"utf-8" "utf8"} (.toLowerCase ^String cs)))))

(defn check-utf8!
  "Throws a 400 naming the field (or `body` for a key) when a pair of the urlencoded body of `req` (its `:body`
  after herald.http.middleware/wrap-params: a fresh stream or the bytes) decodes to bytes that are not UTF-8. Bodies that
  name another charset are left to it. Returns `req`, its :body readable again."
  [req]
  (let [b (:body req)
        ^bytes bs (cond (bytes? b) b (instance? InputStream b) (.readAllBytes ^InputStream b) :else nil)]
    (when (and bs (utf8-charset? req))
      (let [n (alength bs)]
        (loop [start 0]
          (when (< start n)
            (let [end (long (loop [i start] (if (or (= i n) (= (aget bs i) (byte 38))) i (recur (inc i)))))
                  eq (long (loop [i start] (cond (= i end) -1 (= (aget bs i) (byte 61)) i :else (recur (inc i)))))
                  kb (percent-decode bs start (if (neg? eq) end eq))
                  k (utf8 kb)]
              (when-not k
                (throw (err/bad-request (str "a form key is not valid UTF-8: " (pr-str (lenient kb))
                                             " (percent-encode the text's UTF-8 bytes)") "body")))
              (when (and (not (neg? eq)) (nil? (utf8 (percent-decode bs (inc eq) end))))
                (throw (err/bad-request (str "'" k "' is not valid UTF-8: percent-encode the text's UTF-8 bytes"
                                             " (the form decoder would have stored U+FFFD in its place)")
                                        k)))
              (recur (inc end)))))))
    (if (and bs (instance? InputStream b)) (assoc req :body (java.io.ByteArrayInputStream. bs)) req)))
