(ns herald.load.impl.request
  "Request maps and URLs turned into encoded HTTP/1.1 requests and engine request sources."
  (:require [clojure.string :as str])
  (:import (herald.load.client RequestEncoder)
           (herald.load.engine RequestSource)
           (java.net InetAddress URI UnknownHostException)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn parse-url
  "Splits an http:// or https:// URL into {:scheme :tls? :host :port :path} (port 80 or 443 when not given);
  the path keeps its query string."
  [url]
  (let [^URI u (try (URI. (str url))
               (catch Exception e
                 (throw (ex-info (str "bad URL: " url) {:type :herald.load/bad-option :key :url :value url} e))))]
    (when-not (#{"http" "https"} (.getScheme u))
      (throw (ex-info (str "only http:// and https:// URLs are supported: " url)
                      {:type :herald.load/bad-option :key :url :value url})))
    (when-not (.getHost u)
      (throw (ex-info (str "URL without a host: " url) {:type :herald.load/bad-option :key :url :value url})))
    {:scheme (.getScheme u)
     :tls? (= "https" (.getScheme u))
     :host (.getHost u)
     :port (if (neg? (.getPort u)) (if (= "https" (.getScheme u)) 443 80) (.getPort u))
     :path (str (if (str/blank? (.getRawPath u)) "/" (.getRawPath u))
                (when-let [q (.getRawQuery u)] (str "?" q)))}))

(defn resolve-host
  "The address `host` resolves to, as a literal (resolved once, before a run, so that connects do not
  resolve again). An unknown host is a :herald.load/bad-option ex-info naming `k` and `v` (the option
  that gave the host): a DNS failure is a usage error, not a run of connect errors."
  ^String [^String host k v]
  (try (.getHostAddress (InetAddress/getByName host))
       (catch UnknownHostException e
         (throw (ex-info (str host ": unknown host" (if (= k :url) (str " (URL " v ")") (str " (--" (name k) ")")))
                         {:type :herald.load/bad-option :key k :value v :host host} e)))))

(defn host-header
  "The Host header of a target: the host, with the port unless it is the scheme's default."
  [{:keys [host port tls?]}]
  (if (= port (if tls? 443 80)) host (str host ":" port)))

(defn- body-bytes ^bytes [body]
  (cond (nil? body) nil
        (bytes? body) body
        (string? body) (.getBytes ^String body StandardCharsets/UTF_8)
        :else (throw (ex-info (str "request :body must be a string or bytes, not " (type body))
                              {:type :herald.load/bad-request :key :body}))))

(defn method-name
  "The upper-case method name of a keyword or string (default GET)."
  ^String [m]
  (case m
    (nil :get) "GET" :post "POST" :put "PUT" :patch "PATCH" :delete "DELETE" :head "HEAD"
    (str/upper-case (name m))))

(defn encode
  "Encodes request map `req` (:method, :path, :headers map, :body string or bytes) for `host-header`."
  ^bytes [req host-header]
  (let [headers (reduce (fn [^java.util.ArrayList l [k v]] (doto l (.add (name k)) (.add (str v))))
                        (java.util.ArrayList. 8) (:headers req))]
    (try (RequestEncoder/encode (method-name (:method req)) (or (:path req) "/") host-header headers (body-bytes (:body req)))
         (catch IllegalArgumentException e
           (throw (ex-info (str "bad request " (pr-str (select-keys req [:method :path])) ": " (.getMessage e))
                           {:type :herald.load/bad-request :request req} e))))))

(defn constant-source
  "A RequestSource that sends the same request every time."
  ^RequestSource [req host-header]
  (let [bytes (encode req host-header)
        head? (= "HEAD" (method-name (:method req)))]
    (reify RequestSource
      (request [_ _ _] bytes)
      (head [_ _ _] head?)
      (constant [_] true))))

(defn script-source
  "A RequestSource calling `script`, a fn of the request number (a long, counted per worker thread) that
  returns a request map; its :path defaults to `default-req`'s."
  ^RequestSource [script default-req host-header]
  (let [last-head (long-array 4096)]
    (reify RequestSource
      (request [_ w n]
        (let [req (merge default-req (script n))]
          (aset last-head w (if (= "HEAD" (method-name (:method req))) 1 0))
          (encode req host-header)))
      (head [_ w _] (= 1 (aget last-head w)))
      (constant [_] false))))
