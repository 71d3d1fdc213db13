(ns herald.feed.test-util
  "Test helpers: a feed system on a temporary data directory and a small HTTP client over java.net.http."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed :as feed]
            [herald.json :as json])
  (:import (java.net URI URLEncoder)
           (java.net.http HttpClient HttpClient$Version HttpRequest HttpRequest$BodyPublishers HttpResponse
                          HttpResponse$BodyHandlers)
           (java.nio.charset StandardCharsets)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)
           (java.time Duration)))

(set! *warn-on-reflection* true)

(defn temp-dir
  "A new temporary directory (a string path)."
  [prefix]
  (str (Files/createTempDirectory prefix (make-array FileAttribute 0))))

(defn delete-tree!
  "Deletes a directory recursively (best effort)."
  [path]
  (doseq [^java.io.File f (reverse (file-seq (io/file path)))] (.delete f)))

(defn start-feed!
  "Starts the feed on 127.0.0.1 and an ephemeral port, on `data-dir` (embedded store) or in memory
  when nil; `overrides` are deep-merged into the config."
  ([data-dir] (start-feed! data-dir {}))
  ([data-dir overrides]
   (feed/start! {:profile (if data-dir :embedded :memory)
                 :env {}
                 :config (merge-with merge
                                     {:http {:port 0 :host "127.0.0.1"}
                                      :store (if data-dir {:data-dir data-dir} {})}
                                     overrides)})))

(def ^HttpClient client
  "A shared HTTP/1.1 client (connection reuse)."
  (-> (HttpClient/newBuilder)
      (.version HttpClient$Version/HTTP_1_1)
      (.connectTimeout (Duration/ofSeconds 30))
      (.build)))

(defn form-encode
  "x-www-form-urlencoded text of a map."
  [m]
  (str/join "&" (for [[k v] m] (str (URLEncoder/encode (name k) StandardCharsets/UTF_8) "="
                                    (URLEncoder/encode (str v) StandardCharsets/UTF_8)))))

(defn request
  "Sends a request to `base` + `path`; returns {:status :headers (lower-case name -> first value)
  :body string :json parsed-or-nil}.

  | key             | meaning |
  |-----------------|---------|
  | `:method`       | :get (default), :post, :put, :delete, :head, :options |
  | `:json`         | a value sent as a JSON body |
  | `:form`         | a map sent form-encoded |
  | `:body`         | a raw string body |
  | `:content-type` | overrides the Content-Type |"
  [base path & {:keys [method json form body content-type] :or {method :get}}]
  (let [[payload ct] (cond (some? json) [(json/write-str json) "application/json"]
                           form [(form-encode form) "application/x-www-form-urlencoded"]
                           body [body nil]
                           :else [nil nil])
        ct (or content-type ct)
        b (cond-> (HttpRequest/newBuilder (URI/create (str base path)))
            true (.timeout (Duration/ofSeconds 30))
            ct (.header "Content-Type" ct)
            true (.method (str/upper-case (name method))
                          (if payload
                            (HttpRequest$BodyPublishers/ofString payload)
                            (HttpRequest$BodyPublishers/noBody))))
        ^HttpResponse resp (.send client (.build b) (HttpResponse$BodyHandlers/ofString))
        headers (into {} (map (fn [[k v]] [(str/lower-case k) (first v)])) (.map (.headers resp)))
        text (str (.body resp))]
    {:status (.statusCode resp)
     :headers headers
     :body text
     :json (when (and (str/starts-with? (str (get headers "content-type")) "application/json")
                      (not (str/blank? text)))
             (json/read text {:keywords? false}))}))

(defn eventually
  "Calls (f) every 50 ms until (ok? result) or `timeout-ms` passed; returns the last result. For views
  the service documents as eventually consistent (inbound feeds after fan-out, search after indexing)."
  [timeout-ms ok? f]
  (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop []
      (let [v (f)]
        (if (or (ok? v) (> (System/currentTimeMillis) deadline))
          v
          (do (Thread/sleep 50) (recur)))))))
