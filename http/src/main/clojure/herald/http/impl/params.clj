(ns herald.http.impl.params
  "Query-string and urlencoded-form decoding for wrap-params, over herald.http.codec.FormDecoder."
  (:require [herald.http.impl.support :as support])
  (:import (herald.http.codec FormDecoder TooManyParamsException)
           (herald.http.route RequestMaps)
           (java.io ByteArrayInputStream InputStream)
           (java.nio.charset Charset IllegalCharsetNameException StandardCharsets UnsupportedCharsetException)))

(set! *warn-on-reflection* true)

(def options
  {:encoding       [#(and (string? %) (Charset/isSupported %)) "a supported charset name"]
   :max-form-bytes [support/pos-int-option? "a positive integer (bytes)"]
   :max-params     [support/pos-int-option? "a positive integer"]})

(def defaults {:encoding "UTF-8" :max-form-bytes (* 1024 1024) :max-params 1000})

(defn content-type
  "The media type of `req`'s Content-Type, lower-cased, without parameters; nil when absent."
  ^String [req]
  (when-let [^String ct (get (:headers req) "content-type")]
    (let [semi (.indexOf ct ";")]
      (.toLowerCase (.trim (if (neg? semi) ct (subs ct 0 semi))) java.util.Locale/ROOT))))

(defn request-charset
  "The charset parameter of `req`'s Content-Type, or `default` when absent or unknown."
  ^Charset [req ^Charset default]
  (if-let [[_ cs] (some->> (get (:headers req) "content-type") (re-find #"(?i);\s*charset=\"?([^\s;\"]+)"))]
    (try (Charset/forName cs) (catch IllegalCharsetNameException _ default) (catch UnsupportedCharsetException _ default))
    default))

(defn body-bytes
  "Reads `req`'s body (InputStream, byte[], String or nil) up to `max` bytes. Returns the bytes, or
  ::too-large when the body is longer."
  [req max]
  (let [b (:body req)]
    (cond
      (nil? b) (byte-array 0)
      (bytes? b) (if (> (alength ^bytes b) (long max)) ::too-large b)
      (string? b) (let [bs (.getBytes ^String b StandardCharsets/UTF_8)] (if (> (alength bs) (long max)) ::too-large bs))
      (instance? InputStream b) (let [bs (.readNBytes ^InputStream b (inc (int max)))]
                                  (if (> (alength bs) (long max)) ::too-large bs))
      :else (byte-array 0))))

(defn- merge-into [p m] (if (seq p) (merge p m) m))

(defn- query-params
  "The decoded query string, or nil when the request has :query-params already."
  [req ^Charset cs max-params]
  (when-not (contains? req :query-params)
    (FormDecoder/decode ^String (:query-string req) cs (int max-params))))

(defn- form-params
  "[form-params body] for urlencoded requests (body: a fresh stream over the bytes read), [{} nil] for
  others, nil when the request has :form-params already, or a reduced 413."
  [req ^Charset cs max-bytes max-params]
  (cond
    (contains? req :form-params) nil
    (not= "application/x-www-form-urlencoded" (content-type req)) [{} nil]
    :else (let [bs (body-bytes req max-bytes)]
            (if (= ::too-large bs)
              (reduced (support/error-response 413 (str "form body larger than " max-bytes " bytes")))
              [(FormDecoder/decode ^bytes bs 0 (alength ^bytes bs) (request-charset req cs) (int max-params))
               (ByteArrayInputStream. ^bytes bs)]))))

(defn- with-params [req qp [fp body]]
  (if (or qp fp)
    (let [params (cond-> (:params req) qp (merge-into qp) fp (merge-into fp))
          kvs (cond-> [:params params] qp (conj :query-params qp) fp (conj :form-params fp) body (conj :body body))]
      (RequestMaps/with req (object-array kvs)))
    req))

(defn params-request
  "Returns `req` with :query-params, :form-params and :params, or a `reduced` error response when the form
  body is too large (413) or holds too many parameters (400)."
  [req {:keys [^Charset charset max-form-bytes max-params]}]
  (try
    (let [qp (query-params req charset max-params)
          form (form-params req charset max-form-bytes max-params)]
      (if (reduced? form) form (with-params req qp form)))
    (catch TooManyParamsException e
      (reduced (support/error-response 400 (str "too many parameters (more than " (.limit e) ")"))))))
