(ns herald.feed.store.opensearch.http
  "A minimal OpenSearch REST client: JSON over the JDK's java.net.http.HttpClient (HTTP/1.1), errors as ex-info.
  No OpenSearch client jar: it would bring Lucene 9 next to the feed's Lucene 10."
  (:require [clojure.string :as str]
            [herald.json :as json])
  (:import (java.io IOException)
           (java.net URI)
           (java.net.http HttpClient HttpClient$Version HttpRequest HttpRequest$BodyPublishers HttpResponse
                          HttpResponse$BodyHandlers HttpTimeoutException)
           (java.nio.charset StandardCharsets)
           (java.time Duration)))

(set! *warn-on-reflection* true)

(deftype Secret [^String value]
  Object
  (toString [_] "<redacted>"))

(defn basic-auth
  "The Authorization header value for HTTP Basic authentication, wrapped so that printing a client never shows it."
  [^String username ^String password]
  (Secret. (str "Basic " (.encodeToString (java.util.Base64/getEncoder)
                                          (.getBytes (str username ":" password) StandardCharsets/UTF_8)))))

(defn client
  "An HttpClient for base-url (\"http://host:port\", no trailing slash needed) with the given timeouts (ms) and,
  optionally, an Authorization header (a Secret from basic-auth) sent with every request. HTTPS uses the JVM's
  default trust store (javax.net.ssl.trustStore). Returns {:http client :base url-without-trailing-slash
  :request-timeout-ms n :auth secret-or-nil}."
  ([base-url connect-timeout-ms request-timeout-ms] (client base-url connect-timeout-ms request-timeout-ms nil))
  ([base-url connect-timeout-ms request-timeout-ms auth]
   {:http (-> (HttpClient/newBuilder)
              (.version HttpClient$Version/HTTP_1_1)
              (.connectTimeout (Duration/ofMillis connect-timeout-ms))
              (.build))
    :base (str/replace base-url #"/+$" "")
    :request-timeout-ms (long request-timeout-ms)
    :auth auth}))

(defn- server-error
  "The server's error text from an error response body: `type: reason` of OpenSearch's {\"error\": {...}}, else
  the body itself (truncated)."
  [^String body]
  (let [parsed (try (json/read body) (catch Exception _ nil))
        err (when (map? parsed) (get parsed "error"))]
    (cond (map? err) (str (get err "type") ": " (get err "reason")
                          (when-let [cause (get err "caused_by")]
                            (when (map? cause) (str " (caused by " (get cause "type") ": " (get cause "reason") ")"))))
          (string? err) err
          :else (subs body 0 (min 500 (count body))))))

(defn- encode ^bytes [body]
  (cond (nil? body) nil
        (string? body) (.getBytes ^String body StandardCharsets/UTF_8)
        :else (json/write-bytes body)))

(defn request
  "Sends one request and returns [status parsed-json-body-or-nil]. body: nil, a String (sent as is, e.g. NDJSON)
  or data (written as JSON). Statuses in ok-statuses (default #{200 201}) return; any other throws
  ex-info {:type :herald.feed.store.opensearch/http-error :op op :status s :error server-text}. A connection
  failure or timeout throws {:type :herald.feed.store.opensearch/unavailable :op op :url u} with the cause.

  | key          | type    | default    | meaning                                        |
  |--------------|---------|------------|------------------------------------------------|
  | :ok          | set     | #{200 201} | statuses that are not errors                   |
  | :timeout-ms  | long    | client's   | this request's timeout                         |
  | :ndjson?     | boolean | false      | Content-Type application/x-ndjson (the bulk API) |"
  ([c op method path] (request c op method path nil nil))
  ([c op method path body] (request c op method path body nil))
  ([{:keys [^HttpClient http base request-timeout-ms ^Secret auth]} op method ^String path body
    {:keys [ok timeout-ms ndjson?] :or {ok #{200 201}}}]
   (let [url (str base path)
         bytes (encode body)
         req (-> (HttpRequest/newBuilder (URI/create url))
                 (.timeout (Duration/ofMillis (long (or timeout-ms request-timeout-ms))))
                 (.header "Accept" "application/json")
                 (cond-> auth (.header "Authorization" (.-value auth)))
                 (cond-> bytes (.header "Content-Type" (if ndjson? "application/x-ndjson" "application/json")))
                 (.method (str/upper-case (name method))
                          (if bytes (HttpRequest$BodyPublishers/ofByteArray bytes)
                              (HttpRequest$BodyPublishers/noBody)))
                 (.build))
         ^HttpResponse resp (try
                              (.send http req (HttpResponse$BodyHandlers/ofByteArray))
                              (catch HttpTimeoutException e
                                (throw (ex-info (str "OpenSearch " op " timed out: " url)
                                                {:type :herald.feed.store.opensearch/unavailable :op op :url url
                                                 :error (str "timeout: " (ex-message e))} e)))
                              (catch IOException e
                                (throw (ex-info (str "OpenSearch " op " failed: cannot reach " url ": "
                                                     (or (ex-message e) (.getName (class e))))
                                                {:type :herald.feed.store.opensearch/unavailable :op op :url url
                                                 :error (str e)} e))))
         status (.statusCode resp)
         ^bytes raw (.body resp)
         text (when (and raw (pos? (alength raw))) (String. raw StandardCharsets/UTF_8))]
     (if (contains? ok status)
       [status (when (and text (not= method :head)) (json/read text))]
       (let [error (if text (server-error text) (str "HTTP " status))]
         (throw (ex-info (str "OpenSearch " op " failed (" method " " path " -> " status "): " error)
                         {:type :herald.feed.store.opensearch/http-error :op op :status status :error error})))))))

(defn url-encode
  "s percent-encoded for a URL path segment or query value."
  ^String [^String s]
  (-> (java.net.URLEncoder/encode s StandardCharsets/UTF_8) (str/replace "+" "%20")))
