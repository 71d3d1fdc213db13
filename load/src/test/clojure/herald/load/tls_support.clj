(ns herald.load.tls-support
  "herald.http servers for the protocol tests: a self-signed certificate made with the JDK's keytool (PEM
  files for the server and for --cacert), and with-http-server starting herald.http on an ephemeral port."
  (:require [herald.http :as http])
  (:import (java.nio.charset StandardCharsets)
           (java.security KeyStore)
           (java.util Base64)))

(set! *warn-on-reflection* true)

(defn- keytool! [& args]
  (let [p (-> (ProcessBuilder. ^java.util.List (into [(str (System/getProperty "java.home") "/bin/keytool")] args))
              (.redirectErrorStream true)
              (.start))
        out (slurp (.getInputStream p))]
    (when-not (zero? (.waitFor p))
      (throw (ex-info (str "keytool failed: " out) {:type ::keytool :args args})))))

(defn- pem ^String [^String kind ^bytes der]
  (str "-----BEGIN " kind "-----\n"
       (.encodeToString (Base64/getMimeEncoder 64 (.getBytes "\n" StandardCharsets/US_ASCII)) der)
       "\n-----END " kind "-----\n"))

(defn- make-certificate
  "A self-signed EC certificate for CN `cn` (SAN localhost, 127.0.0.1) in a new temp dir: {:cert-file :key-file}."
  [cn]
  (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-load-tls" (make-array java.nio.file.attribute.FileAttribute 0)))
        p12 (java.io.File. dir "server.p12")]
    (keytool! "-genkeypair" "-alias" "server" "-keyalg" "EC" "-groupname" "secp256r1" "-dname" (str "CN=" cn)
              "-ext" "san=dns:localhost,ip:127.0.0.1" "-validity" "2" "-keystore" (str p12)
              "-storetype" "PKCS12" "-storepass" "changeit" "-keypass" "changeit")
    (let [ks (doto (KeyStore/getInstance "PKCS12") (.load (java.io.FileInputStream. p12) (.toCharArray "changeit")))
          crt (java.io.File. dir "server.crt")
          key (java.io.File. dir "server.key")]
      (spit crt (pem "CERTIFICATE" (.getEncoded (.getCertificate ks "server"))))
      (spit key (pem "PRIVATE KEY" (.getEncoded (.getKey ks "server" (.toCharArray "changeit")))))
      {:cert-file (str crt) :key-file (str key)})))

(def certificate
  "The tests' self-signed server certificate (made once per JVM): {:cert-file :key-file}."
  (delay (make-certificate "localhost")))

(defn tls-options
  "herald.http options serving HTTPS with the test certificate."
  []
  {:tls {:cert-chain-file (:cert-file @certificate) :private-key-file (:key-file @certificate)}})

(defmacro with-http-server
  "Starts herald.http with `handler` and `opts` on 127.0.0.1 and an ephemeral port, binds {:server :port} to
  `sym`, runs body, and stops the server."
  [[sym handler opts] & body]
  `(let [s# (http/start-server ~handler (merge {:port 0 :host "127.0.0.1"} ~opts))
         ~sym {:server s# :port (http/server-port s#)}]
     (try ~@body
          (finally @(http/stop-server s#)))))
