(ns herald.http.impl.json-body
  "Request and response sides of the JSON middleware, over herald.json."
  (:require [herald.http.impl.params :as params]
            [herald.http.impl.support :as support]
            [herald.json :as json])
  (:import (java.io ByteArrayInputStream InputStream InputStreamReader)
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
  "Parses the body of `req` with herald.json's read options `opts`. Returns [:ok value] (value nil for an empty
  body), [:malformed ex-info], or [:as-is] when the body is not raw (an outer middleware parsed it already)."
  [req opts]
  (let [b (:body req)]
    (try
      (cond
        (nil? b) [:ok nil]
        (string? b) [:ok (when-not (.isBlank ^String b) (json/read b opts))]
        (not (or (bytes? b) (instance? InputStream b))) [:as-is]
        :else
        (let [^bytes bs (if (bytes? b) b (.readAllBytes ^InputStream b))
              cs (params/request-charset req StandardCharsets/UTF_8)]
          (cond
            (zero? (alength bs)) [:ok nil]
            (utf? cs) [:ok (json/read bs opts)]
            :else [:ok (json/read (InputStreamReader. (ByteArrayInputStream. bs) cs) opts)])))
      (catch clojure.lang.ExceptionInfo e
        (if (= :herald.json/malformed (:type (ex-data e))) [:malformed e] (throw e))))))

(defn default-malformed-response
  "400 with `{\"error\":\"malformed JSON: <detail>\"}`."
  [_request ex]
  (support/error-response 400 (str "malformed JSON: " (:message (ex-data ex)))))

(defn- has-content-type? [headers]
  (or (contains? headers "Content-Type") (contains? headers "content-type")
      (boolean (some #(.equalsIgnoreCase "content-type" (str %)) (keys headers)))))

(defn json-response
  "Encodes a collection body of `resp` as JSON bytes with herald.json's write options `opts` and sets
  Content-Type unless present."
  [resp opts]
  (let [body (:body resp)]
    (if (coll? body)
      (let [headers (:headers resp)
            resp (assoc resp :body (json/write-bytes body opts))]
        (if (has-content-type? headers)
          resp
          (assoc resp :headers (assoc headers "Content-Type" support/json-type))))
      resp)))
