(ns herald.http.impl.options
  "Validates start-server's option map and turns it into one immutable Java ServerConfig."
  (:import (herald.http.config HandlerMode ServerConfig ServerConfig$Builder Transport)
           (herald.http.server AccessLog AccessLog$Format AccessLog$Sink)
           (herald.http.tls TlsContexts)
           (io.netty.handler.ssl ClientAuth SslContext)
           (java.io File)
           (javax.net.ssl SSLContext)))

(set! *warn-on-reflection* true)

(defn- int-in [lo hi] (fn [v] (and (int? v) (<= lo v hi))))

(def ^:private max-int Integer/MAX_VALUE)

(def modes {:virtual-threads HandlerMode/VIRTUAL_THREADS
            :worker-pool HandlerMode/WORKER_POOL
            :event-loop HandlerMode/EVENT_LOOP})

(def transports {:auto Transport/AUTO :epoll Transport/EPOLL :kqueue Transport/KQUEUE :nio Transport/NIO})

(defn- redact
  "`v` with a :tls map's key password removed, for error messages and ex-data."
  [k v]
  (if (and (= k :tls) (map? v) (contains? v :private-key-password)) (assoc v :private-key-password "<redacted>") v))

(def client-auths {:none ClientAuth/NONE :optional ClientAuth/OPTIONAL :require ClientAuth/REQUIRE})

(defn- file-ish? [v] (or (string? v) (instance? File v)))

(defn- tls-map? [v]
  (and (map? v)
       (every? #{:cert-chain-file :private-key-file :private-key-password :client-auth :trust-cert-file} (keys v))
       (file-ish? (:cert-chain-file v))
       (file-ish? (:private-key-file v))
       (or (nil? (:private-key-password v)) (string? (:private-key-password v)))
       (or (nil? (:client-auth v)) (contains? client-auths (:client-auth v)))
       (or (nil? (:trust-cert-file v)) (file-ish? (:trust-cert-file v)))))

(defn- tls-context
  "The server SslContext of a valid :tls map; ex-info naming :tls when the files cannot be used."
  ^SslContext [{:keys [cert-chain-file private-key-file private-key-password client-auth trust-cert-file] :as v}]
  (try (TlsContexts/fromPem (File. (str cert-chain-file)) (File. (str private-key-file))
                            ^String private-key-password ^ClientAuth (client-auths (or client-auth :none))
                            (some-> trust-cert-file str File.))
       (catch Exception e
         (throw (ex-info (str "invalid herald.http option :tls " (pr-str (redact :tls v))
                              ": cannot build a TLS context: " (.getMessage e))
                         {:type :herald.http/invalid-option :key :tls :value (redact :tls v)} e)))))

(defn- ssl-context ^SslContext [v]
  (if (instance? SSLContext v) (TlsContexts/fromJdk v) v))

(defn- socket-path? [v]
  (and (or (string? v) (instance? File v) (instance? java.nio.file.Path v))
       (<= 1 (count (.getBytes (str v) "UTF-8")) ServerConfig/MAX_SOCKET_PATH_BYTES)))

(def access-log-formats {:common AccessLog$Format/COMMON :combined AccessLog$Format/COMBINED
                         :json AccessLog$Format/JSON})

(defn- access-log-map? [v]
  (and (map? v)
       (every? #{:format :to :logger :queue-size} (keys v))
       (or (nil? (:format v)) (contains? access-log-formats (:format v)))
       (let [to (:to v)] (or (nil? to) (= :slf4j to) (string? to) (instance? File to) (fn? to)))
       (or (nil? (:logger v)) (string? (:logger v)))
       (or (nil? (:queue-size v)) ((int-in 1 10000000) (:queue-size v)))))

(defn access-log
  "The AccessLog for a valid `:access-log` map, nil for none; ex-info naming :access-log when its file cannot be
  opened or SLF4J is not on the classpath."
  ^AccessLog [v]
  (when v
    (let [{:keys [format to logger queue-size] :or {format :common to :slf4j logger "herald.http.access"
                                                     queue-size 65536}} v
          sink (try (cond (= :slf4j to) (.newInstance (.getConstructor (Class/forName "herald.http.server.Slf4jSink")
                                                                       (into-array Class [String]))
                                                      (object-array [logger]))
                          (fn? to) (AccessLog/fnSink to)
                          :else (AccessLog/fileSink (File. (str to))))
                    (catch Throwable e
                      (throw (ex-info (str "invalid herald.http option :access-log " (pr-str v) ": " e)
                                      {:type :herald.http/invalid-option :key :access-log :value v} e))))]
      (AccessLog. (access-log-formats format) sink (int queue-size)))))

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
   :max-connections-per-address [(int-in 1 max-int) "a positive integer"
                                 (fn [^ServerConfig$Builder b v] (.maxConnectionsPerAddress b (int v)))]
   :header-timeout-ms [(int-in 0 Long/MAX_VALUE) "a non-negative integer (0 = none)"
                       (fn [^ServerConfig$Builder b v] (.headerTimeoutMs b (long v)))]
   :shutdown-timeout-ms [(int-in 0 Long/MAX_VALUE) "a non-negative integer"
                         (fn [^ServerConfig$Builder b v] (.shutdownTimeoutMs b (long v)))]
   :io-threads [(int-in 1 1024) "an integer 1-1024" (fn [^ServerConfig$Builder b v] (.ioThreads b (int v)))]
   :transport [transports "one of :auto, :epoll, :kqueue, :nio"
               (fn [^ServerConfig$Builder b v] (.transport b ^Transport (transports v)))]
   :server-header [#(or (nil? %) (and (string? %) (not (re-find #"[\r\n]" %)))) "a String without CR/LF, or nil"
                   (fn [^ServerConfig$Builder b v] (.serverHeader b ^String v))]
   :proxy? [boolean? "a boolean" (fn [^ServerConfig$Builder b v] (.proxy b (boolean v)))]
   :error-logger [ifn? "a function (fn [throwable request])" (fn [b _] b)]
   :error-response [ifn? "a function (fn [status info]) returning a Ring response" (fn [b _] b)]
   :websocket-max-frame-bytes [(int-in 125 max-int) "an integer >= 125"
                               (fn [^ServerConfig$Builder b v] (.websocketMaxFrameBytes b (int v)))]
   :websocket-close-wait-ms [(int-in 1 Long/MAX_VALUE) "a positive integer"
                             (fn [^ServerConfig$Builder b v] (.websocketCloseWaitMs b (long v)))]
   :ssl-context [#(or (instance? SSLContext %) (and (instance? SslContext %) (.isServer ^SslContext %)))
                 "a javax.net.ssl.SSLContext or a server-side io.netty.handler.ssl.SslContext"
                 (fn [^ServerConfig$Builder b v] (.sslContext b (ssl-context v)))]
   :tls [tls-map? (str "a map {:cert-chain-file :private-key-file} (PEM paths, String or File) with optional "
                       ":private-key-password (String), :client-auth (:none, :optional, :require), :trust-cert-file")
         (fn [^ServerConfig$Builder b v] (.sslContext b (tls-context v)))]
   :max-pipelined [(int-in 1 1024) "an integer 1-1024" (fn [^ServerConfig$Builder b v] (.maxPipelined b (int v)))]
   :max-write-buffer-bytes [(int-in 2 max-int) "an integer >= 2"
                            (fn [^ServerConfig$Builder b v] (.maxWriteBufferBytes b (int v)))]
   :access-log [#(or (nil? %) (access-log-map? %))
                (str "nil or a map with optional :format (:common, :combined, :json), :to (:slf4j, a file path "
                     "String or File, or a function of one line), :logger (String), :queue-size (int)")
                (fn [b _] b)]
   :reserved-connections [(int-in 0 max-int) "a non-negative integer"
                          (fn [^ServerConfig$Builder b v] (.reservedConnections b (int v)))]
   :health-paths [#(and (coll? %) (every? (fn [p] (and (string? p) (.startsWith ^String p "/"))) %))
                  "a collection of paths starting with /"
                  (fn [^ServerConfig$Builder b v] (.healthPaths b ^java.util.Collection (vec v)))]
   :http2? [boolean? "a boolean" (fn [^ServerConfig$Builder b v] (.http2 b (boolean v)))]
   :unix-socket [#(or (nil? %) (socket-path? %))
                 (str "nil or a path (String, File or java.nio.file.Path) of 1-" ServerConfig/MAX_SOCKET_PATH_BYTES
                      " UTF-8 bytes")
                 (fn [^ServerConfig$Builder b v] (.unixSocket b (some-> v str)))]
   :unix-socket-permissions [#(or (nil? %) (and (string? %) (re-matches #"([r-][w-][x-]){3}" %)))
                             "nil or a String like \"rw-rw----\""
                             (fn [^ServerConfig$Builder b v] (.unixSocketPermissions b ^String v))]
   :websocket-compression? [boolean? "a boolean"
                            (fn [^ServerConfig$Builder b v] (.websocketCompression b (boolean v)))]
   :http2-max-concurrent-streams [(int-in 1 max-int) "a positive integer"
                                  (fn [^ServerConfig$Builder b v] (.http2MaxConcurrentStreams b (int v)))]})

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
      (when-not (ok? v) (throw (invalid k (redact k v) (str "expected " expected))))
      (throw (invalid k v (str "unknown option; known options: " (sort (keys specs)))))))
  (when (and (:ssl-context opts) (:tls opts))
    (throw (invalid :tls (:tls opts) "give either :ssl-context or :tls, not both")))
  opts)

(defn config
  "The ServerConfig for a validated option map."
  ^ServerConfig [opts]
  (let [b (reduce-kv (fn [b k v] ((nth (specs k) 2) b v)) (ServerConfig/builder) (validate! opts))
        ;; with :unix-socket, TCP is served only when :port is given
        b (.tcp ^ServerConfig$Builder b (or (nil? (:unix-socket opts)) (contains? opts :port)))]
    (try (.build ^ServerConfig$Builder b)
         (catch IllegalArgumentException e
           (throw (ex-info (str "invalid herald.http options: " (.getMessage e))
                           {:type :herald.http/invalid-option :key nil :value opts} e))))))
