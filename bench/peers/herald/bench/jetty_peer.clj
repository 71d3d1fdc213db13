(ns herald.bench.jetty-peer
  "The Jetty side of bench/peers.sh: the benchmark's Ring handler (herald.http.bench-app/handler, the very
  function herald serves) on Ring's own Jetty adapter, `ring.adapter.jetty/run-jetty`, unmodified, as users
  run it. Only the port, the host and (with --max-threads/--min-threads) the thread pool are set; everything
  else is run-jetty's default.

  Arguments: --port N (0 = any free port), --max-threads N and --min-threads N (run-jetty's :max-threads,
  default 50, and :min-threads, default 8). Prints READY <port> when bound."
  (:require [herald.http.bench-app :as app]
            [ring.adapter.jetty :as jetty])
  (:import (org.eclipse.jetty.server Server ServerConnector)))

(set! *warn-on-reflection* true)

(def ^:private usage "usage: clojure.main -m herald.bench.jetty-peer [--port N] [--max-threads N] [--min-threads N]")

(defn- parse-args
  "run-jetty options from the command line: --port, --max-threads, --min-threads (each followed by a number)."
  [args]
  (loop [opts {:port 0 :host "127.0.0.1" :join? false}
         [k v & more :as args] args]
    (cond
      (empty? args) opts
      (nil? (some-> v parse-long))
      (throw (ex-info (str "expected a number after " k "; " usage) {:type ::usage :arg k :value v}))
      (= k "--port") (recur (assoc opts :port (parse-long v)) more)
      (= k "--max-threads") (recur (assoc opts :max-threads (parse-long v)) more)
      (= k "--min-threads") (recur (assoc opts :min-threads (parse-long v)) more)
      :else (throw (ex-info (str "unknown argument " k "; " usage) {:type ::usage :arg k})))))

(defn -main
  "Starts run-jetty with the bench handler on 127.0.0.1, prints READY <port>, and serves until the JVM stops."
  [& args]
  (let [^Server server (jetty/run-jetty app/handler (parse-args args))
        ^ServerConnector connector (first (.getConnectors server))]
    (.addShutdownHook (Runtime/getRuntime) (Thread. ^Runnable (fn [] (.stop server))))
    (println "READY" (.getLocalPort connector))
    (flush)
    (.join server)))
