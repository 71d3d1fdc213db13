(ns herald.feed.errors
  "Client errors as ex-info values and their JSON responses: 400/401/403/404/405/409/413/415 bodies that name the field or value
  at fault, 503 for a storage outage."
  (:require [clojure.walk :as walk]
            [herald.http :as http]
            [herald.json :as json]))

(set! *warn-on-reflection* true)

(defn- json-safe
  "`v` when JSON can carry it; a number no double holds (1e400, read exactly as a BigDecimal, or a non-finite
  double) becomes its text, so an error body never fails to encode and every client can read it."
  [v]
  (walk/postwalk #(cond (and (instance? Double %) (not (Double/isFinite %))) (str %)
                        (and (decimal? %) (not (Double/isFinite (.doubleValue ^java.math.BigDecimal %)))) (str %)
                        :else %)
                 v))

(defn bad-request
  "An ex-info for a 400: `msg` names the problem, `field` the request field at fault (a string),
  `value` the offending value (omitted when nil)."
  ([msg field] (bad-request msg field nil nil))
  ([msg field value] (bad-request msg field value nil))
  ([msg field value cause]
   (ex-info msg (cond-> {:type :herald.feed/bad-request :field field}
                  (some? value) (assoc :value (json-safe value)))
            cause)))

(defn not-found
  "An ex-info for a 404 naming the missing resource; `field` is the request field that named it."
  [msg field value]
  (ex-info msg {:type :herald.feed/not-found :field field :value value}))

(defn conflict
  "An ex-info for a 409: the request conflicts with the state (a befriend of a blocked pair); `value` says with
  what."
  [msg field value]
  (ex-info msg {:type :herald.feed/conflict :field field :value value}))

(defn json-text
  "`v` as JSON text for an error message (\"x\", [1,2], {\"a\":1}), never a JVM or EDN rendering."
  ^String [v]
  (try (json/write-str v) (catch Exception _ (pr-str (str v)))))

(defn json-kind
  "The JSON kind of a decoded value, for messages: \"an object\", \"an array\", \"a string\"..."
  [v]
  (cond (nil? v) "null" (map? v) "an object" (sequential? v) "an array" (string? v) "a string"
        (number? v) "a number" (boolean? v) "a boolean" :else "an unknown value"))

(defn unsupported-media-type
  "An ex-info for a 415 naming the content type received (or its absence)."
  [content-type]
  (ex-info (str (if content-type (str "unsupported Content-Type " (json-text content-type)) "no Content-Type")
                ": send application/json or application/x-www-form-urlencoded")
           {:type :herald.feed/unsupported-media-type :field "Content-Type" :value content-type}))

(defn unsupported-charset
  "An ex-info for a 415: the form body's Content-Type names `charset`, which the feed cannot decode a form with (not
  a charset Java knows, or one that does not write ASCII as ASCII)."
  [content-type charset]
  (ex-info (str "unsupported charset " (json-text charset) " for a form body: send it in UTF-8 (name no charset, or"
                " charset=utf-8)")
           {:type :herald.feed/unsupported-media-type :field "Content-Type" :value content-type}))

(defn payload-too-large
  "An ex-info for a 413 naming the body size (when known: a chunked body is cut at the limit) and the limit."
  ([limit]
   (ex-info (str "request body exceeds the limit of " limit " bytes")
            {:type :herald.feed/payload-too-large :field "body"}))
  ([size limit]
   (ex-info (str "request body of " size " bytes exceeds the limit of " limit " bytes")
            {:type :herald.feed/payload-too-large :field "body" :value size})))

(def ^:private statuses
  "The ex-info :type of every error that answers a client. A store's own validation (:herald.feed.store/invalid,
  :herald.feed.store/bad-cursor) is deliberately absent: the service boundary checks every request first, so one
  reaching here is a programmer error, a 500 in the log, never a message in the store's vocabulary."
  {:herald.feed/bad-request 400
   :herald.feed/unauthorized 401 ; herald.feed.auth: with WWW-Authenticate
   :herald.feed/forbidden 403
   :herald.feed/payload-too-large 413
   :herald.feed/not-found 404
   :herald.feed/conflict 409
   :herald.feed/unsupported-media-type 415
   :herald.feed/unavailable 503
   :herald.feed.auth/unavailable 503 ; a JWKS URL that does not answer
   :herald.feed.store/unavailable 503
   ;; a backend's own outage types (see herald.feed.store.opensearch.http, herald.feed.store.cassandra.session)
   :herald.feed.store.opensearch/unavailable 503
   :herald.feed.store.cassandra/unavailable 503
   :herald.feed.store.cassandra/timeout 503
   :herald.json/malformed 400
   ;; issue 10: Idempotency-Key (herald.feed.idempotency)
   :herald.feed/unprocessable 422      ; a key used before with other fields
   :herald.feed/not-implemented 501    ; a store that cannot keep keys
   :herald.feed/maybe-recorded 503})   ; the post may be durable: retry with the same key

(defn error-body
  "The JSON error body {:error msg :field f :value v} (absent keys omitted)."
  [msg field value]
  (cond-> {:error msg}
    field (assoc :field field)
    ;; JSON values stay JSON (a repeated form key's values are an array), anything else its text
    (some? value) (assoc :value (if (or (string? value) (number? value) (boolean? value)
                                        (map? value) (sequential? value))
                                  value
                                  (str value)))))

(defn response
  "A Ring response with a JSON error body."
  [status msg & {:keys [field value headers]}]
  {:status status
   :headers (merge {"content-type" "application/json; charset=utf-8"} headers)
   :body (json/write-bytes (error-body msg field value))})

(defn server-answer
  "herald.http's `:error-response` for the feed: the answers the server makes itself before a handler runs (400,
  408, 413 above `:http :max-body-bytes`, 414, 431, 503, ...) as the feed's JSON errors, with the server's reason
  as the message (`field` `body` for a 413); a 503 asks to retry after a second."
  [status {:keys [message]}]
  (let [status (long status)]
    (response status (str (or message "the server refused the request"))
              :field (when (= 413 status) "body")
              :headers (when (= 503 status) {"retry-after" "1"}))))

(defn ex->response
  "The Ring response for a client error ex-info (see `statuses`), or nil when `e` is not one."
  [e]
  (let [data (ex-data e)
        status (get statuses (:type data))]
    (cond
      (nil? status) nil
      ;; the backend's own words (hosts, keys, exception classes) go to the log, not to API clients
      (= 503 status) (response 503 (case (:type data)
                                     :herald.feed.auth/unavailable
                                     "the keys that verify bearer tokens cannot be fetched now: retry the request"
                                     :herald.feed/maybe-recorded (ex-message e)
                                     "storage temporarily unavailable: retry the request")
                               :field (when (= :herald.feed/maybe-recorded (:type data)) "Idempotency-Key")
                               :headers {"retry-after" "1"})
      :else
      (let [field (:field data)
            field (if (keyword? field) (name field) field)]
        ;; a malformed JSON body is the body's fault
        (response status (ex-message e) :field (or field (when (= :herald.json/malformed (:type data)) "body"))
                  :value (:value data)
                  :headers (when-let [w (:www-authenticate data)] {"www-authenticate" w}))))))

(defn unavailable?
  "True when `e` (or an ex-info in its cause chain) is an outage: an ex-info whose :type answers 503."
  [^Throwable e]
  (boolean (some #(= 503 (get statuses (:type (ex-data %)))) (take-while some? (iterate #(.getCause ^Throwable %) e)))))
