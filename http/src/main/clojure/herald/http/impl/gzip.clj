(ns herald.http.impl.gzip
  "Response compression for wrap-gzip: negotiation, eligibility and header rewriting."
  (:require [clojure.string :as str])
  (:import (herald.http.codec Gzip GzipInputStream)
           (java.io File FileInputStream InputStream)
           (java.nio.charset Charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn compressible-type?
  "Default `:compress?` test on a Content-Type value: text/*, JSON, XML, JavaScript, SVG and friends;
  not text/event-stream (server-sent events must reach the client event by event)."
  [^String content-type]
  (when content-type
    (let [ct (.toLowerCase content-type java.util.Locale/ROOT)]
      (or (and (.startsWith ct "text/") (not (.startsWith ct "text/event-stream")))
          (str/includes? ct "json") (str/includes? ct "xml") (str/includes? ct "javascript")
          (.startsWith ct "application/x-www-form-urlencoded") (.startsWith ct "image/svg")))))

(defn header
  "The value of response header `name` (any case) and its actual key, as [key value], or nil."
  [headers ^String name]
  (some (fn [[k v]] (when (.equalsIgnoreCase name (str k)) [k v])) headers))

(defn- charset-of ^Charset [content-type]
  (or (when-let [[_ cs] (and content-type (re-find #"(?i);\s*charset=\"?([^\s;\"]+)" content-type))]
        (try (Charset/forName cs) (catch Exception _ nil)))
      StandardCharsets/UTF_8))

(defn- body-bytes ^bytes [body content-type]
  (if (string? body) (.getBytes ^String body (charset-of content-type)) body))

(defn- without [headers & names]
  (reduce (fn [h n] (if-let [[k] (header h n)] (dissoc h k) h)) headers names))

(defn- add-vary [headers]
  (let [[k v] (header headers "vary")]
    (cond (nil? k) (assoc headers "Vary" "Accept-Encoding")
          (re-find #"(?i)accept-encoding|\*" (str v)) headers
          :else (assoc headers k (str v ", Accept-Encoding")))))

(defn- weaken-etag [headers]
  (let [[k v] (header headers "etag")]
    (if (and k (string? v) (not (.startsWith ^String v "W/"))) (assoc headers k (str "W/" v)) headers)))

(defn- body-kind [body streams?]
  (cond (string? body) :string
        (bytes? body) :bytes
        (not streams?) nil
        (instance? File body) :file
        (instance? InputStream body) :stream))

(defn eligible?
  "True when `resp` may be compressed: a String or byte[] body (or, with `streams?`, a File or an
  InputStream), no Content-Encoding, a status that carries a body (not 1xx/204/206/304), a compressible
  type (per `compress?`)."
  [resp compress? streams?]
  (let [{:keys [status headers body]} resp
        status (or status 200)]
    (and (body-kind body streams?)
         (not (or (< status 200) (= status 204) (= status 206) (= status 304)))
         (nil? (header headers "content-encoding"))
         (compress? (second (header headers "content-type"))))))

(defn- compressed-headers [headers]
  (-> headers (without "content-length") weaken-etag add-vary (assoc "Content-Encoding" "gzip")))

(defn- payload
  "The body as bytes (a String encoded with the response charset), or the File/InputStream itself."
  [body content-type]
  (if (string? body) (body-bytes body content-type) body))

(defn- big-enough? [payload min-bytes]
  (cond (bytes? payload) (>= (alength ^bytes payload) (long min-bytes))
        (instance? File payload) (>= (.length ^File payload) (long min-bytes))
        :else true))

(defn- compress [payload level]
  (cond (bytes? payload) (Gzip/compress payload 0 (alength ^bytes payload) (int level))
        (instance? File payload) (GzipInputStream. (FileInputStream. ^File payload) (int level))
        :else (GzipInputStream. ^InputStream payload (int level))))

(defn gzip-response
  "Compresses `resp` when the client accepts gzip and it is eligible and big enough (streams always are);
  adds `Vary: Accept-Encoding` to every response that would be compressed for such a client."
  [req resp {:keys [min-bytes level compress? streams?]}]
  (if-not (and resp (eligible? resp compress? streams?))
    resp
    (let [headers (:headers resp)
          p (payload (:body resp) (second (header headers "content-type")))]
      (cond
        (not (big-enough? p min-bytes)) resp
        (Gzip/acceptsGzip (get (:headers req) "accept-encoding"))
        (assoc resp :body (compress p level) :headers (compressed-headers headers))
        :else (assoc resp :headers (add-vary headers))))))
