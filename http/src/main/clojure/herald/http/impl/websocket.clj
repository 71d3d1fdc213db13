(ns herald.http.impl.websocket
  "Adapts Ring 1.11 WebSocket listeners (a map of fns, or a value implementing ring.websocket.protocols/Listener)
  to the Java core, and makes herald's socket a ring.websocket.protocols/Socket when Ring is on the classpath."
  (:import (herald.http.websocket HeraldWebSocket WebSocketListener)
           (java.util.concurrent CompletableFuture)
           (java.util.function BiConsumer)))

(set! *warn-on-reflection* true)

(defn- map-listener [m]
  (let [{:keys [on-open on-message on-ping on-pong on-error on-close]} m]
    (reify WebSocketListener
      (onOpen [_ s] (when on-open (on-open s)))
      (onMessage [_ s msg] (when on-message (on-message s msg)))
      (handlesPing [_] (some? on-ping))
      (onPing [_ s data] (when on-ping (on-ping s data)))
      (onPong [_ s data] (when on-pong (on-pong s data)))
      (onError [_ s t] (when on-error (on-error s t)))
      (onClose [_ s code reason] (when on-close (on-close s code reason))))))

(def ^:private tried-require
  (delay (try (require 'ring.websocket.protocols) (catch Throwable _ nil))))

(defn- ring-var [sym] (some-> (find-ns 'ring.websocket.protocols) (ns-resolve sym) deref))

(defn- send-async [^HeraldWebSocket s msg succeed fail]
  (.whenComplete ^CompletableFuture (.sendAsync s msg)
                 (reify BiConsumer
                   (accept [_ _ err] (if err (fail err) (succeed))))))

(def ^:private extended (atom nil))

(defn- ensure-ring-socket!
  "Extends ring.websocket.protocols/Socket (and AsyncSocket) to HeraldWebSocket once per loaded Ring ns."
  []
  @tried-require
  (when-let [ns (find-ns 'ring.websocket.protocols)]
    (when-not (identical? @extended ns)
      (when-let [socket (ring-var 'Socket)]
        (extend HeraldWebSocket socket
                {:-open? (fn [^HeraldWebSocket s] (.isOpen s))
                 :-send (fn [^HeraldWebSocket s msg] (.send s msg))
                 :-ping (fn [^HeraldWebSocket s data] (.ping s data))
                 :-pong (fn [^HeraldWebSocket s data] (.pong s data))
                 :-close (fn [^HeraldWebSocket s code reason] (.close s (int code) reason))}))
      (when-let [async (ring-var 'AsyncSocket)]
        (extend HeraldWebSocket async {:-send-async send-async}))
      (reset! extended ns))
    ns))

(defn- ring-listener [x]
  (let [on-open (ring-var 'on-open) on-message (ring-var 'on-message) on-pong (ring-var 'on-pong)
        on-error (ring-var 'on-error) on-close (ring-var 'on-close) on-ping (ring-var 'on-ping)
        ping? (boolean (when-let [p (ring-var 'PingListener)] (satisfies? p x)))]
    (reify WebSocketListener
      (onOpen [_ s] (on-open x s))
      (onMessage [_ s msg] (on-message x s msg))
      (handlesPing [_] ping?)
      (onPing [_ s data] (on-ping x s data))
      (onPong [_ s data] (on-pong x s data))
      (onError [_ s t] (on-error x s t))
      (onClose [_ s code reason] (on-close x s code reason)))))

(defn listener
  "The Java core's hook: a WebSocketListener for a `:ring.websocket/listener` value."
  ^WebSocketListener [x]
  (let [ring-ns (ensure-ring-socket!)
        proto (when ring-ns (ring-var 'Listener))]
    (cond
      (map? x) (map-listener x)
      (and proto (satisfies? proto x)) (ring-listener x)
      :else (throw (ex-info (str "not a WebSocket listener (a map of :on-open/:on-message/... fns or a "
                                 "ring.websocket.protocols/Listener): " (pr-str (type x)))
                            {:type :herald.http/invalid-websocket-listener :listener x})))))
