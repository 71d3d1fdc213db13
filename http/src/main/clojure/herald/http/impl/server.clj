(ns herald.http.impl.server
  "Starts and stops the Java core with the Clojure hooks: handler, error logger, body writer, WebSocket adapter."
  (:require [herald.http.impl.options :as options]
            [herald.http.impl.response :as response]
            [herald.http.impl.websocket :as websocket])
  (:import (herald.http.exception TransportUnavailableException)
           (herald.http.server AccessLog HandlerStats HeraldServer Hooks UnixSocketFile$InUseException)
           (java.util.logging Level Logger)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger logger (Logger/getLogger "herald.http"))

(defn default-error-logger
  "Logs a handler failure once, at SEVERE, to java.util.logging's \"herald.http\" logger (stderr by default)."
  [^Throwable t request]
  (.log logger Level/SEVERE
        (str "herald.http: handler failed"
             (when request (str " for " (some-> (:request-method request) name .toUpperCase) " " (:uri request))))
        t))

(defn start
  "Validates `opts`, starts a HeraldServer serving `handler` and returns it."
  ^HeraldServer [handler opts]
  (when-not (ifn? handler)
    (throw (ex-info (str "handler must be a function, got " (pr-str (type handler)))
                    {:type :herald.http/invalid-option :key :handler :value handler})))
  (let [config (options/config opts)
        log (options/access-log (:access-log opts))
        hooks (Hooks. handler (or (:error-logger opts) default-error-logger)
                      response/body-writer websocket/listener (:error-response opts) log)]
    (try (HeraldServer/start config hooks)
         (catch TransportUnavailableException e
           (when log (.close log))
           (throw (ex-info (str "invalid herald.http option :transport " (.transport config) ": " (.getMessage e))
                           {:type :herald.http/invalid-option :key :transport
                            :value (keyword (.toLowerCase (str (.transport config))))} e)))
         (catch UnixSocketFile$InUseException e
           (when log (.close log))
           (throw (ex-info (str "cannot serve on Unix socket " (.unixSocket config) ": " (.getMessage e))
                           {:type :herald.http/unix-socket-in-use :path (.unixSocket config) :live? (.live e)} e)))
         (catch java.io.IOException e
           (when log (.close log))
           (throw (ex-info (str "cannot bind " (if (.tcp config) (str (.host config) ":" (.port config)) "")
                                (when-let [p (.unixSocket config)] (str " unix:" p)) ": " (.getMessage e))
                           {:type :herald.http/bind-failed :host (.host config) :port (.port config)
                            :unix-socket (.unixSocket config)} e)))
         (catch Throwable e
           (when log (.close log))
           (throw e)))))

(defn stats
  "The snapshot `herald.http/server-stats` returns (see its docstring)."
  [^HeraldServer server]
  (let [^HandlerStats st (.stats server)
        ^AccessLog log (.accessLog server)]
    (cond->
     {:connections (.connections server)
     :pending (.pending server)
     :queue-depth (.queueDepth st)
     :handlers-started (.started st)
     :queue-wait-ms-total (/ (.queueWaitNanos st) 1e6)
     :queue-wait-ms-max (/ (.maxQueueWaitNanos st) 1e6)
     :rejected (.rejected st)
     :errors (into {} (map (fn [[status n]] [(long status) n])) (.errors st))
     :transport (.transport server)}
      log (assoc :access-log {:written (.written log) :dropped (.dropped log)}))))
