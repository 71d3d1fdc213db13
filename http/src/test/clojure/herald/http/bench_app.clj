(ns herald.http.bench-app
  "The herald side of bench/http.sh: TechEmpower plaintext and JSON routes as a Ring handler on herald.http."
  (:require [herald.http :as http]
            [herald.http.router :as router])
  (:import (com.fasterxml.jackson.core JsonFactory JsonGenerator)
           (java.io ByteArrayOutputStream)))

(set! *warn-on-reflection* true)

(def ^:private plaintext-headers {"Content-Type" "text/plain"})
(def ^:private json-headers {"Content-Type" "application/json"})
(def ^:private not-found {:status 404 :headers plaintext-headers :body "Not Found"})

(def ^:private ^JsonFactory json-factory (JsonFactory.))

(defn- jackson-json-bytes
  "Serialises a map of keyword keys to string values with jackson-core: the stand-in for a tree that has
  neither herald.json/write-bytes nor herald.http/write-json-bytes (bench/http.sh may build an old commit)."
  ^bytes [m]
  (let [out (ByteArrayOutputStream. 64)]
    (with-open [^JsonGenerator g (.createGenerator json-factory out)]
      (.writeStartObject g)
      (doseq [[k v] m]
        (.writeStringField g (name k) (str v)))
      (.writeEndObject g))
    (.toByteArray out)))

(def ^:private json-bytes
  "herald.json/write-bytes, or on trees from before herald.json herald.http/write-json-bytes, else
  jackson-json-bytes."
  (or (some-> (try (requiring-resolve 'herald.json/write-bytes) (catch Exception _ nil)) deref)
      (some-> (ns-resolve 'herald.http 'write-json-bytes) deref)
      jackson-json-bytes))

(defn- plaintext [_] {:status 200 :headers plaintext-headers :body "Hello, World!"})
(defn- json [_] {:status 200 :headers json-headers :body (json-bytes {:message "Hello, World!"})})

(defn handler
  "The benchmark's Ring handler: GET /plaintext -> \"Hello, World!\" as text/plain, GET /json ->
  {\"message\":\"Hello, World!\"} serialised per request; 404 otherwise."
  [request]
  (case (:uri request)
    "/plaintext" (plaintext request)
    "/json" (json request)
    not-found))

(defn routed-handler
  "The same two routes through `herald.http.router/router` (with its 404, 405 and automatic HEAD/OPTIONS)."
  []
  (router/router [["/plaintext" {:get plaintext}]
                ["/json" {:get json}]]))

(def ^:private usage
  (str "usage: clojure.main -m herald.http.bench-app [--port N] [--mode event-loop|virtual-threads|worker-pool]"
       " [--io-threads N] [--router true|false]"))

(defn- parse-args
  "Parses --port N (default 8080, 0 = any free port), --mode (default event-loop), --io-threads N
  (default: herald's own) and --router (default false) into start-server options plus ::router?."
  [args]
  (loop [opts {:port 8080 :host "127.0.0.1" :mode :event-loop}
         [k v & more :as args] args]
    (cond
      (empty? args) opts
      (nil? v) (throw (ex-info (str "missing value after " k "; " usage) {:type ::usage :arg k}))
      (= k "--router") (recur (assoc opts ::router? (parse-boolean v)) more)
      (= k "--port") (recur (assoc opts :port (parse-long v)) more)
      (= k "--mode") (recur (assoc opts :mode (keyword v)) more)
      (= k "--io-threads") (recur (assoc opts :io-threads (parse-long v)) more)
      :else (throw (ex-info (str "unknown argument " k "; " usage) {:type ::usage :arg k})))))

(defn -main
  "Starts herald with `handler` (or `routed-handler` with --router true) on 127.0.0.1, prints READY <port>,
  and serves until the JVM is stopped."
  [& args]
  (let [opts (parse-args args)
        server (http/start-server (if (::router? opts) (routed-handler) handler) (dissoc opts ::router?))]
    (.addShutdownHook (Runtime/getRuntime)
                      (Thread. ^Runnable (fn [] (deref (http/stop-server server) 5000 nil))))
    (println "READY" (http/server-port server))
    (flush)
    @(promise)))
