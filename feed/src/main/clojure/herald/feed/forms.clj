(ns herald.feed.forms
  "Strict text for form-encoded bodies: herald.http decodes a form leniently (an invalid byte sequence becomes
  U+FFFD, as browsers do; an unknown `charset=` falls back to UTF-8); the feed stores only the text a client meant,
  so a key or value whose percent-decoded bytes are not text in the body's charset (UTF-8 unless the Content-Type
  names another) is a 400 naming the field, and a charset the feed cannot decode a form with is a 415."
  (:require [herald.feed.errors :as err])
  (:import (java.io ByteArrayOutputStream InputStream)
           (java.nio ByteBuffer)
           (java.nio.charset CharacterCodingException Charset CodingErrorAction StandardCharsets)))

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

(defn- text
  "The text of `bs` when it is valid in charset `cs`, else nil."
  [^bytes bs ^Charset cs]
  (try (str (.decode (doto (.newDecoder cs)
                       (.onMalformedInput CodingErrorAction/REPORT)
                       (.onUnmappableCharacter CodingErrorAction/REPORT))
                     (ByteBuffer/wrap bs)))
       (catch CharacterCodingException _ nil)))

(defn- lenient ^String [^bytes bs ^Charset cs] (String. bs cs))

(def ^:private ascii-probe "azAZ09=&%+.-_*")

(defn- ascii-compatible?
  "True when `cs` writes ASCII as ASCII (what a urlencoded body's `=`, `&`, `%XX` and `+` need; UTF-16 does not)."
  [^Charset cs]
  (and (.canEncode cs)
       (java.util.Arrays/equals (.getBytes ^String ascii-probe cs) (.getBytes ^String ascii-probe StandardCharsets/US_ASCII))))

(defn form-charset
  "The charset of the form body of `req`: UTF-8 when its Content-Type names none, else the one named. A charset Java
  does not know, or one that does not write ASCII as ASCII, is a 415 naming the Content-Type (herald.http would
  decode the body as UTF-8, or as garbage, instead)."
  ^Charset [req]
  (let [ct (get-in req [:headers "content-type"])
        named (some->> ct (re-find #"(?i);\s*charset=\"?([^\s;\"]+)") second)
        cs (when named (try (Charset/forName named) (catch IllegalArgumentException _ nil)))]
    (cond (nil? named) StandardCharsets/UTF_8
          (and cs (ascii-compatible? cs)) cs
          :else (throw (err/unsupported-charset ct named)))))

(defn check-text!
  "Throws a 400 naming the field (or `body` for a key) when a pair of the urlencoded body of `req` (its `:body`
  after herald.http.middleware/wrap-params: a fresh stream or the bytes) decodes to bytes that are not text in the
  body's charset (`form-charset`: UTF-8 unless named; a charset the feed cannot take is a 415). Returns `req`, its
  :body readable again."
  [req]
  (let [b (:body req)
        cs (form-charset req)
        cs-name (if (= cs StandardCharsets/UTF_8) "UTF-8" (.name cs))
        ^bytes bs (cond (bytes? b) b (instance? InputStream b) (.readAllBytes ^InputStream b) :else nil)]
    (when bs
      (let [n (alength bs)]
        (loop [start 0]
          (when (< start n)
            (let [end (long (loop [i start] (if (or (= i n) (= (aget bs i) (byte 38))) i (recur (inc i)))))
                  eq (long (loop [i start] (cond (= i end) -1 (= (aget bs i) (byte 61)) i :else (recur (inc i)))))
                  kb (percent-decode bs start (if (neg? eq) end eq))
                  k (text kb cs)]
              (when-not k
                (throw (err/bad-request (str "a form key is not valid " cs-name ": " (pr-str (lenient kb cs))
                                             " (percent-encode the text's " cs-name " bytes)") "body")))
              (when (and (not (neg? eq)) (nil? (text (percent-decode bs (inc eq) end) cs)))
                (throw (err/bad-request (str "'" k "' is not valid " cs-name ": percent-encode the text's " cs-name
                                             " bytes (the form decoder would have stored U+FFFD in its place)")
                                        k)))
              (recur (inc end)))))))
    (if (and bs (instance? InputStream b)) (assoc req :body (java.io.ByteArrayInputStream. bs)) req)))
