(ns herald.http.impl.options
  "Validates start-server's option map and turns it into one immutable Java ServerConfig."
  (:import (herald.http.config HandlerMode ServerConfig ServerConfig$Builder Transport)))

(set! *warn-on-reflection* true)

(defn- int-in [lo hi] (fn [v] (and (int? v) (<= lo v hi))))

(def ^:private max-int Integer/MAX_VALUE)

(def modes {:virtual-threads HandlerMode/VIRTUAL_THREADS
            :worker-pool HandlerMode/WORKER_POOL
            :event-loop HandlerMode/EVENT_LOOP})

(def transports {:auto Transport/AUTO :epoll Transport/EPOLL :nio Transport/NIO})

(def specs
  "Option key -> [valid? expected-description apply-fn]."
  {:port [(int-in 0 65535) "an integer 0-65535" (fn [^ServerConfig$Builder b v] (.port b (int v)))]
   :host [string? "a String" (fn [^ServerConfig$Builder b v] (.host b ^String v))]
   :mode [modes "one of :virtual-threads, :worker-pool, :event-loop"
          (fn [^ServerConfig$Builder b v] (.mode b ^HandlerMode (modes v)))]
   :async? [boolean? "a boolean" (fn [^ServerConfig$Builder b v] (.async b (boolean v)))]
   :worker-threads [(int-in 1 100000) "an integer 1-100000" (fn [^ServerConfig$Builder b v] (.workerThreads b (int v)))]
   :max-pending [(int-in 1 max-int) "a positive integer" (fn [^ServerConfig$Builder b v] (.maxPending b (int v)))]
   :max-body-bytes [(int-in 0 (- max-int 8)) "an integer 0-2^31-9" (fn [^ServerConfig$Builder b v] (.maxBodyBytes b (long v)))]
   :max-header-bytes [(int-in 256 max-int) "an integer >= 256" (fn [^ServerConfig$Builder b v] (.maxHeaderBytes b (int v)))]
   :max-request-line-bytes [(int-in 64 max-int) "an integer >= 64"
                            (fn [^ServerConfig$Builder b v] (.maxRequestLineBytes b (int v)))]
   :idle-timeout-ms [(int-in 0 Long/MAX_VALUE) "a non-negative integer (0 = none)"
                     (fn [^ServerConfig$Builder b v] (.idleTimeoutMs b (long v)))]
   :request-timeout-ms [(int-in 0 Long/MAX_VALUE) "a non-negative integer (0 = none)"
                        (fn [^ServerConfig$Builder b v] (.requestTimeoutMs b (long v)))]
   :max-connections [(int-in 1 max-int) "a positive integer" (fn [^ServerConfig$Builder b v] (.maxConnections b (int v)))]
   :shutdown-timeout-ms [(int-in 0 Long/MAX_VALUE) "a non-negative integer"
                         (fn [^ServerConfig$Builder b v] (.shutdownTimeoutMs b (long v)))]
   :io-threads [(int-in 1 1024) "an integer 1-1024" (fn [^ServerConfig$Builder b v] (.ioThreads b (int v)))]
   :transport [transports "one of :auto, :epoll, :nio"
               (fn [^ServerConfig$Builder b v] (.transport b ^Transport (transports v)))]
   :server-header [#(or (nil? %) (and (string? %) (not (re-find #"[\r\n]" %)))) "a String without CR/LF, or nil"
                   (fn [^ServerConfig$Builder b v] (.serverHeader b ^String v))]
   :proxy? [boolean? "a boolean" (fn [^ServerConfig$Builder b v] (.proxy b (boolean v)))]
   :error-logger [ifn? "a function (fn [throwable request])" (fn [b _] b)]
   :websocket-max-frame-bytes [(int-in 125 max-int) "an integer >= 125"
                               (fn [^ServerConfig$Builder b v] (.websocketMaxFrameBytes b (int v)))]
   :max-pipelined [(int-in 1 1024) "an integer 1-1024" (fn [^ServerConfig$Builder b v] (.maxPipelined b (int v)))]})

(defn- invalid [k v msg]
  (ex-info (str "invalid herald.http option " k " " (pr-str v) ": " msg)
           {:type :herald.http/invalid-option :key k :value v}))

(defn validate!
  "Returns `opts` when every key is known and every value valid; throws ex-info
  `{:type :herald.http/invalid-option :key k :value v}` naming the first bad key otherwise."
  [opts]
  (when-not (or (nil? opts) (map? opts))
    (throw (invalid :opts opts "options must be a map")))
  (doseq [[k v] opts]
    (if-let [[ok? expected] (specs k)]
      (when-not (ok? v) (throw (invalid k v (str "expected " expected))))
      (throw (invalid k v (str "unknown option; known options: " (sort (keys specs)))))))
  opts)

(defn config
  "The ServerConfig for a validated option map."
  ^ServerConfig [opts]
  (let [b (reduce-kv (fn [b k v] ((nth (specs k) 2) b v)) (ServerConfig/builder) (validate! opts))]
    (try (.build ^ServerConfig$Builder b)
         (catch IllegalArgumentException e
           (throw (ex-info (str "invalid herald.http options: " (.getMessage e))
                           {:type :herald.http/invalid-option :key nil :value opts} e))))))
