(ns herald.http.middleware
  "Plain Ring middleware for params, JSON bodies and gzip, backed by herald's Java codecs; both arities."
  (:require [herald.http.impl.gzip :as gzip]
            [herald.http.impl.json-body :as json-body]
            [herald.http.impl.params :as params]
            [herald.http.impl.support :as support])
  (:import (java.nio.charset Charset)))

(set! *warn-on-reflection* true)

(defmacro ^:private ring-fn
  "A 1- and 3-arity Ring handler around `handler`: `pre` computes the request passed on (or a `reduced`
  response that short-circuits), `post` the response from `resp`. In the 3-arity, exceptions thrown by `pre`
  or `post` go to `raise`."
  [handler [req] pre [resp] post]
  `(fn
     ([~req]
      (let [r# ~pre]
        (if (reduced? r#) (deref r#) (let [~req r# ~resp (~handler r#)] ~post))))
     ([~req respond# raise#]
      (let [r# (try ~pre (catch Throwable t# (raise# t#) ::raised))]
        (cond (identical? ::raised r#) nil
              (reduced? r#) (respond# (deref r#))
              :else (~handler r#
                     (fn [~resp]
                       (let [~req r#
                             out# (try ~post (catch Throwable t# (raise# t#) ::raised))]
                         (when-not (identical? ::raised out#) (respond# out#))))
                     raise#))))))

(defn wrap-params
  "Decodes the query string and urlencoded form bodies into maps with String keys (as
  ring.middleware.params does, with the decoding in Java):

  | key             | value                                                                     |
  |-----------------|---------------------------------------------------------------------------|
  | `:query-params` | from `:query-string`                                                      |
  | `:form-params`  | from the body when Content-Type is application/x-www-form-urlencoded, else `{}` |
  | `:params`       | existing `:params` merged with the query params, then the form params    |

  `+` is a space, `%XX` a byte, bytes are decoded with the request's charset (Content-Type `charset=`),
  else `:encoding`. A repeated key gives a vector of its values in order (`a=1&a=2` -> `{\"a\" [\"1\" \"2\"]}`);
  a key without `=` has the value `\"\"`; empty keys are skipped. Malformed escapes (`%zz`, a lone `%`) are
  kept literally and invalid byte sequences become U+FFFD: decoding never fails. Only urlencoded bodies are
  read; the body is then replaced by a fresh stream over the same bytes. Keys already in the request
  (`:query-params`, `:form-params`) are left as they are.

  | option            | type   | default   | meaning                                                 |
  |-------------------|--------|-----------|---------------------------------------------------------|
  | `:encoding`       | String | \"UTF-8\"   | charset when the request names none                     |
  | `:max-form-bytes` | long   | 1048576   | a longer form body -> 413 with a JSON error body        |
  | `:max-params`     | int    | 1000      | more pairs in the query or form -> 400 with a JSON error body |"
  ([handler] (wrap-params handler {}))
  ([handler opts]
   (support/check-options! "wrap-params" params/options opts)
   (let [o (merge params/defaults opts)
         o (assoc o :charset (Charset/forName (:encoding o)))]
     (ring-fn handler [req] (params/params-request req o) [resp] resp))))

(def ^:private json-body-options
  "wrap-json-body's options: herald.json/read's (checked here too, so a bad one fails when the handler is wrapped,
  as `:herald.http/invalid-option`) and :malformed-response."
  {:keywords?              [boolean? "a boolean"]
   :key-fn                 [ifn? "a function of one String"]
   :bigdecimals?           [boolean? "a boolean"]
   :reject-duplicate-keys? [boolean? "a boolean"]
   :max-depth              [support/pos-int-option? "a positive integer"]
   :max-string-length      [support/pos-int-option? "a positive integer (chars)"]
   :malformed-response     [ifn? "a function (fn [request ex-info] response)"]})

(def ^:private json-response-options
  "wrap-json-response's options: herald.json/write-bytes's."
  {:pretty? [boolean? "a boolean"]
   :key-fn  [ifn? "a function of a map key returning a String"]})

(defn wrap-json-body
  "Parses the body of requests whose Content-Type is application/json or application/*+json into Clojure
  data at `:body` (see `herald.json/read` for the conversions). An empty body gives `:body nil`;
  a body that is not raw (not an InputStream, byte[] or String: parsed already) is left as it is.
  Other requests pass unchanged. Bodies in a non-UTF charset (Content-Type `charset=`) are decoded with it.
  Malformed JSON (or a limit exceeded) does not reach the handler: the response is
  `(malformed-response request ex-info)` (herald.json's `{:type :herald.json/malformed :message detail :line l
  :column c}`), by default 400 with `{\"error\":\"malformed JSON: <detail>\"}`.

  | option                    | type    | default  | meaning                                         |
  |---------------------------|---------|----------|-------------------------------------------------|
  | `:keywords?`              | boolean | false    | object keys as keywords                         |
  | `:key-fn`                 | fn      | nil      | String key -> map key; overrides `:keywords?`   |
  | `:bigdecimals?`           | boolean | false    | decimals as BigDecimal                          |
  | `:reject-duplicate-keys?` | boolean | false    | a repeated key is malformed JSON                |
  | `:max-depth`              | int     | 512      | max nesting of arrays/objects                   |
  | `:max-string-length`      | int     | 20000000 | max chars in one string                         |
  | `:malformed-response`     | fn      | 400 JSON | `(fn [request ex-info] response)`               |

  The body size is bounded by the server's `:max-body-bytes`."
  ([handler] (wrap-json-body handler {}))
  ([handler opts]
   (support/check-options! "wrap-json-body" json-body-options opts)
   (let [read-opts (not-empty (dissoc opts :malformed-response))
         malformed (:malformed-response opts json-body/default-malformed-response)
         pre (fn [req]
               (if-not (json-body/json-request? req)
                 req
                 (let [[status v] (json-body/parse-body req read-opts)]
                   (case status
                     :ok (assoc req :body v)
                     :as-is req
                     :malformed (reduced (malformed req v))))))]
     (ring-fn handler [req] (pre req) [resp] resp))))

(defn wrap-json-response
  "Encodes collection bodies (maps, vectors, lists, seqs, sets) of responses as JSON bytes (see
  `herald.json/write-str` for the conversions) and sets `Content-Type: application/json;
  charset=utf-8` unless the response has a Content-Type (any case). Other bodies (String, byte[],
  InputStream, File, nil) pass unchanged. Note that a seq body, which Ring would stream element by
  element, becomes one JSON array here. A value that cannot be encoded throws
  `{:type :herald.json/unencodable}` (a 500 from the server).

  | option     | type    | default | meaning                                        |
  |------------|---------|---------|------------------------------------------------|
  | `:pretty?` | boolean | false   | indented output                                |
  | `:key-fn`  | fn      | nil     | map key -> the String written (see write-str)  |"
  ([handler] (wrap-json-response handler {}))
  ([handler opts]
   (support/check-options! "wrap-json-response" json-response-options opts)
   (let [opts (not-empty opts)]
     (ring-fn handler [req] req [resp] (json-body/json-response resp opts)))))

(def ^:private gzip-options
  {:streams?  [boolean? "a boolean"]
   :min-bytes [#(and (int? %) (not (neg? %))) "a non-negative integer (bytes)"]
   :level     [#(and (int? %) (<= 1 % 9)) "an integer from 1 to 9"]
   :compress? [ifn? "a predicate of the Content-Type value (String or nil)"]})

(defn wrap-gzip
  "gzip-compresses response bodies for clients whose Accept-Encoding accepts gzip (q > 0, or `*`).

  A response is compressed when its body is a String or byte[] of at least `:min-bytes`, a File of at
  least `:min-bytes` or an InputStream (with `:streams?`; seqs are left alone), it has no
  Content-Encoding, its status carries a body (not 1xx, 204, 206, 304) and `(compress? content-type)`
  holds. Then a String/byte[] body becomes the gzip bytes and a File/InputStream body a stream that
  compresses as the server reads it (flushing whenever the source has nothing more available, so a slow
  stream still arrives piece by piece; closing it closes the source), `Content-Encoding: gzip` is set,
  Content-Length is removed (the server computes it or sends chunks), a strong ETag is made weak. Every response that would be compressed for a client accepting gzip gets
  `Vary: Accept-Encoding`, whether this client accepts gzip or not.

  | option       | type | default | meaning                                                         |
  |--------------|------|---------|-----------------------------------------------------------------|
  | `:min-bytes` | int  | 860     | smaller String/byte[]/File bodies are sent as they are          |
  | `:streams?`  | bool | true    | also compress File and InputStream bodies                       |
  | `:level`     | int  | 6       | deflate level, 1 (fast) to 9 (small)                            |
  | `:compress?` | fn   | text/* (not event-stream), JSON, XML, JavaScript, SVG | predicate on the Content-Type value (nil when absent) |"
  ([handler] (wrap-gzip handler {}))
  ([handler opts]
   (support/check-options! "wrap-gzip" gzip-options opts)
   (let [o (merge {:min-bytes 860 :level 6 :compress? gzip/compressible-type? :streams? true} opts)]
     (ring-fn handler [req] req [resp] (gzip/gzip-response req resp o)))))
