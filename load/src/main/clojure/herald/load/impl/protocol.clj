(ns herald.load.impl.protocol
  "The protocol options of every mode (https URLs, --http2, --streams, --cacert, --insecure, --tls-version)
  checked and turned into the engine's Target: where to connect, TLS or not, HTTP/1.1 or HTTP/2."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.load.impl.options :as options])
  (:import (herald.load.client Target Tls)
           (io.netty.handler.ssl SslContext)))

(set! *warn-on-reflection* true)

(def defaults
  "Protocol defaults: HTTP/1.1, one stream, the JDK's trusted CAs, TLS 1.3 and 1.2."
  {:http2? false :streams 1 :insecure? false :ca-cert nil :tls-versions nil})

(def ^:private tls-names {"1.2" "TLSv1.2" "1.3" "TLSv1.3" "TLSv1.2" "TLSv1.2" "TLSv1.3" "TLSv1.3"})

(defn tls-versions
  "\"1.2\", \"1.3\", \"1.2,1.3\" (or the JDK names TLSv1.2, TLSv1.3) as the JDK's protocol names."
  [v]
  (cond (nil? v) nil
        (string? v) (mapv #(or (tls-names (str/trim %))
                               (throw (ex-info (str "bad option :tls-versions = " (pr-str v) ": want 1.2, 1.3 or 1.2,1.3")
                                               {:type :herald.load/bad-option :key :tls-versions :value v})))
                          (str/split v #","))
        :else (tls-versions (str/join "," v))))

(defn validate
  "Fills the protocol defaults into `opts` and checks them; `tls?` says whether the target is https.
  Throws :herald.load/bad-option naming the key."
  [opts tls?]
  (let [m (merge defaults opts)]
    (-> m
        (options/check :http2? boolean? "must be true or false")
        (options/check :streams #(and (integer? %) (pos? (long %))) "must be a positive integer")
        (options/check :streams #(or (:http2? m) (= 1 %)) "needs :http2? (--http2): HTTP/1.1 has one request in flight per connection")
        (options/check :streams #(or (not (:new-connection? m)) (= 1 %)) "cannot go with :new-connection? (one request per connection)")
        (options/check :insecure? boolean? "must be true or false")
        (options/check :ca-cert #(or (nil? %) (.isFile (io/file %))) "must name a readable PEM file of certificates")
        (options/check :ca-cert #(or (nil? %) tls?) "needs an https:// target")
        (options/check :insecure? #(or (not %) tls?) "needs an https:// target")
        (assoc :tls-versions (tls-versions (:tls-versions m))))))

(defn ssl-context
  "The client SslContext of validated `opts` (nil unless `tls?`): trusting :ca-cert, or anything with
  :insecure?, or the JDK's CAs; :tls-versions; ALPN h2 with :http2?, else http/1.1."
  ^SslContext [{:keys [ca-cert insecure? tls-versions http2?]} tls?]
  (when tls?
    (try (Tls/client ca-cert (boolean insecure?) tls-versions (boolean http2?))
         (catch Exception e
           (throw (ex-info (str "cannot set up TLS" (when ca-cert (str " with --cacert " ca-cert)) ": " (ex-message e))
                           {:type :herald.load/bad-option :key (if ca-cert :ca-cert :tls-versions) :value ca-cert} e))))))

(defn target
  "The engine Target of validated `opts` for `address` (resolved), `port` and `server-name` (the URL's
  host); `tls?` for https."
  ^Target [opts address port server-name tls? timeout-s]
  (Target. address (int port) server-name (ssl-context opts tls?) (boolean (:http2? opts)) (int (:streams opts))
           (int (max 1 (min Integer/MAX_VALUE (long (* 1000 (double timeout-s))))))))

(defn protocol-name
  "\"h2\", \"h2c\", \"http/1.1\" or \"http/1.1 over TLS\" for validated options."
  [opts tls?]
  (if (:http2? opts) (if tls? "h2" "h2c") (if tls? "http/1.1 over TLS" "http/1.1")))
