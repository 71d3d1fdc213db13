(ns herald.http.impl.json-body
  "Request and response sides of the JSON middleware."
  (:require [herald.http.impl.json :as json]
            [herald.http.impl.params :as params])
  (:import (herald.http.codec JsonReader JsonWriter MalformedJsonException)
           (java.io InputStream InputStreamReader)
           (java.nio.charset Charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn json-request?
  "True when the request's media type is application/json or application/*+json."
  [req]
  (when-let [ct (params/content-type req)]
    (or (= ct "application/json")
        (and (.startsWith ct "application/") (.endsWith ct "+json")))))

(defn- utf? [^Charset cs] (.startsWith (.name cs) "UTF-"))

(defn parse-body
  "Parses the body of `req` with `reader`. Returns [:ok value] (value nil for an empty body),
  [:malformed ex-info], or [:as-is] when the body is not raw (an outer middleware parsed it already)."
  [req ^JsonReader reader]
  (let [b (:body req)]
    (try
      (cond
        (nil? b) [:ok nil]
        (string? b) [:ok (when-not (.isBlank ^String b) (.read reader ^String b))]
        (not (or (bytes? b) (instance? InputStream b))) [:as-is]
        :else
        (let [^bytes bs (if (bytes? b) b (.readAllBytes ^InputStream b))
              cs (params/request-charset req StandardCharsets/UTF_8)]
          (cond
            (zero? (alength bs)) [:ok nil]
            (utf? cs) [:ok (.read reader bs 0 (alength bs))]
            :else [:ok (.read reader (InputStreamReader. (java.io.ByteArrayInputStream. bs) cs))])))
      (catch MalformedJsonException e [:malformed (json/malformed e)]))))

(defn default-malformed-response
  "400 with `{\"error\":\"malformed JSON: <detail>\"}`."
  [_request ex]
  (json/error-response 400 (str "malformed JSON: " (:message (ex-data ex)))))

(defn- has-content-type? [headers]
  (or (contains? headers "Content-Type") (contains? headers "content-type")
      (boolean (some #(.equalsIgnoreCase "content-type" (str %)) (keys headers)))))

(def ^:private json-type "application/json; charset=utf-8")

(defn json-response
  "Encodes a collection body of `resp` as JSON bytes with `writer` and sets Content-Type unless present."
  [resp ^JsonWriter writer]
  (let [body (:body resp)]
    (if (coll? body)
      (let [headers (:headers resp)
            resp (assoc resp :body (try (.writeBytes writer body)
                                        (catch herald.http.codec.JsonEncodeException e
                                          (throw (json/encode-error e)))))]
        (if (has-content-type? headers)
          resp
          (assoc resp :headers (assoc headers "Content-Type" json-type))))
      resp)))
