(ns herald.feed.servers.redis
  "A real Redis server for the tests, started once per test JVM on 127.0.0.1: embedded-redis (the redis 6.2
  binary its jar ships), else Debian's redis-server; bounded by maxmemory with volatile-lru. Stopped at JVM exit."
  (:require [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :as t])
  (:import (java.net ServerSocket Socket)
           (redis.embedded RedisServer)))

(set! *warn-on-reflection* true)

(defn- free-port ^long []
  (with-open [s (ServerSocket. 0)] (.getLocalPort s)))

(defn- wait-up [^long port]
  (loop [n 0]
    (when-not (try (with-open [_ (Socket. "127.0.0.1" (int port))] true) (catch Exception _ false))
      (when (> n 100) (throw (ex-info (str "redis did not listen on " port) {})))
      (Thread/sleep 50)
      (recur (inc n)))))

(defn- start-embedded
  ([] (start-embedded true))
  ([at-exit?]
   (let [port (free-port)
         server (-> (RedisServer/newRedisServer) (.bind "127.0.0.1") (.port (int port))
                    (.setting "maxmemory 64mb") (.setting "maxmemory-policy volatile-lru")
                    (.setting "save \"\"") (.setting "appendonly no") (.build))]
     (.start server)
     (when at-exit? (.addShutdownHook (Runtime/getRuntime) (Thread. #(.stop server))))
     (wait-up port)
     {:server "embedded-redis" :port port :uri (str "redis://127.0.0.1:" port "/0") :stop #(.stop server)
      :start #(do (.start server) (wait-up port))})))

(defn- start-debian []
  (let [port (free-port)
        dir (str (System/getProperty "java.io.tmpdir") "/herald-redis-" port)
        r (sh/sh "redis-server" "--daemonize" "yes" "--bind" "127.0.0.1" "--port" (str port) "--save" ""
                 "--appendonly" "no" "--maxmemory" "64mb" "--maxmemory-policy" "volatile-lru"
                 "--pidfile" (str dir ".pid") "--logfile" (str dir ".log"))]
    (when-not (zero? (long (:exit r))) (throw (ex-info (str "redis-server failed: " (:err r)) {})))
    (.addShutdownHook (Runtime/getRuntime)
                      (Thread. #(sh/sh "redis-cli" "-p" (str port) "shutdown" "nosave")))
    (wait-up port)
    {:server "Debian redis-server" :port port :uri (str "redis://127.0.0.1:" port "/0")}))

(def ^:private server
  (delay (let [errors (volatile! [])]
           (or (some (fn [[what f]] (try (f) (catch Throwable e (vswap! errors conj (str what ": " (ex-message e))) nil)))
                     [["embedded-redis" start-embedded] ["Debian redis-server" start-debian]])
               {:error (str/join "; " @errors)}))))

(defn info
  "{:uri :port :server} of the running server (started on first use), or {:error why}."
  []
  @server)

(def ^:private prefixes (atom 0))

(defn fresh-config
  "Options for herald.feed.store.redis/open on the test server, under a new key prefix."
  []
  {:uri (:uri (info)) :prefix (str "t" (System/currentTimeMillis) "-" (swap! prefixes inc) ":")})

(defn start-own!
  "A second embedded Redis that the caller stops with (:stop result) and starts again, on the same port, with
  (:start result) (to test a server going away and coming back), or {:error why}."
  []
  (try (start-embedded false) (catch Throwable e {:error (ex-message e)})))

(defmacro when-up
  "Runs body when the server runs, else reports the test SKIPPED with the reason."
  [& body]
  `(if-let [e# (:error (info))]
     (t/do-report {:type :skip :message (str "Redis could not start: " e#)})
     (do ~@body)))
