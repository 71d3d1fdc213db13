(ns herald.feed.idempotency
  "The `Idempotency-Key` request header of POST /participant/{id}/outbound (issue 10): its check, the request's
  fingerprint, the key request handed to the fan-out (herald.feed.fanout/KeyedFanout), the answer from the key
  record, and the cheap purge of expired keys. The decisions: docs/adr/0014-idempotency-keys.md."
  (:require [herald.feed.errors :as err]
            [herald.feed.store.keys :as keys])
  (:import (java.nio.charset StandardCharsets)
           (java.security MessageDigest)
           (java.util HexFormat)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(def header
  "The request header's name as clients send it."
  "Idempotency-Key")

(defn request-key
  "The `Idempotency-Key` of Ring request `req` (nil when absent): one value of 1-255 visible ASCII characters
  (0x21-0x7e) other than the comma, else a 400 naming the header. The comma is out because Ring joins a repeated
  header's values with one: two `Idempotency-Key` lines would otherwise name a third key, neither the client's."
  [req]
  (when-let [v (get-in req [:headers "idempotency-key"])]
    (if (and (string? v) (re-matches #"[\x21-\x2b\x2d-\x7e]{1,255}" v))
      v
      (throw (err/bad-request (str "'" header "' must be one value of 1 to 255 visible ASCII characters other than"
                                   " ',' (no space; a repeated header arrives joined by commas), got "
                                   (err/json-text (if (string? v) (subs v 0 (min 300 (count v))) (str v))))
                              header)))))

(defn fingerprint
  "A SHA-256 (hex) of a post's fields as requested: sender, `occurred` as sent (nil when left out: a retry the
  next day matches), subject, story."
  ^String [from occurred subject story]
  (let [md (MessageDigest/getInstance "SHA-256")
        field! (fn [^String v]
                 ;; each field length-prefixed (-1 for an absent one), so no two requests share the bytes
                 (let [b (some-> v (.getBytes StandardCharsets/UTF_8))]
                   (.update md (.array (.putInt (java.nio.ByteBuffer/allocate 4) (if b (alength ^bytes b) -1))))
                   (when b (.update md ^bytes b))))]
    (run! field! [(str from) occurred subject story])
    (.formatHex (HexFormat/of) (.digest md))))

(defn key-request
  "The key request (herald.feed.store.keys) of participant `owner`'s key `k` with `fp`, live `ttl-ms` from now."
  [owner k fp ttl-ms]
  (let [now (System/currentTimeMillis)]
    {:owner owner :key k :fingerprint fp :now now :expires-at (+ now (long ttl-ms))}))

(defn answer
  "The post of key record `rec` for key request `kr`: a 422 naming the header when the record's fingerprint is
  another request's."
  [rec kr]
  (if (= (:fingerprint rec) (:fingerprint kr))
    (:post rec)
    (throw (ex-info (str "'" header "' " (err/json-text (:key kr)) " was used for a post with other fields: send"
                         " the same fields again, or use a new key for a new post")
                    {:type :herald.feed/unprocessable :field header :value (:key kr)}))))

(defn purger
  "The purge state of a service context: when the last purge started."
  []
  (AtomicLong. 0))

(defn maybe-purge!
  "Deletes the keys of `store` expired at `now` on a virtual thread, at most once per `interval-ms` per context
  (`last`, from `purger`); failures are left for the next time (an expired key is ignored anyway)."
  [store ^AtomicLong last interval-ms]
  (let [now (System/currentTimeMillis) prev (.get last)]
    (when (and (>= (- now prev) (long interval-ms)) (.compareAndSet last prev now))
      (Thread/startVirtualThread #(try (keys/purge-keys! store now) (catch Throwable _ nil))))
    nil))
