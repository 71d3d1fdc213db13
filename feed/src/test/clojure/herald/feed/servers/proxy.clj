(ns herald.feed.servers.proxy
  "A TCP proxy on 127.0.0.1 in front of a real server, that a test cuts (every connection closed, nothing listening:
  clients see the server go away) and restores on the same port: an outage of a server that the test did not start
  and must not stop."
  (:import (java.io InputStream OutputStream)
           (java.net InetSocketAddress ServerSocket Socket)
           (java.util.concurrent ConcurrentHashMap)))

(set! *warn-on-reflection* true)

(defn- pump [^Socket from ^Socket to]
  (Thread/startVirtualThread
   (fn []
     (try (let [^InputStream in (.getInputStream from) ^OutputStream out (.getOutputStream to)
                buf (byte-array 16384)]
            (loop []
              (let [n (.read in buf)]
                (when (pos? n) (.write out buf 0 n) (.flush out) (recur)))))
          (catch Exception _ nil)
          (finally (.close from) (.close to))))))

(defn- listen! [{:keys [port target-port ^ConcurrentHashMap sockets server]}]
  (let [ss (doto (ServerSocket.) (.setReuseAddress true) (.bind (InetSocketAddress. "127.0.0.1" (int port))))]
    (reset! server ss)
    (Thread/startVirtualThread
     (fn []
       (try (loop []
              (let [c (.accept ss)
                    t (Socket. "127.0.0.1" (int target-port))]
                (.put sockets c true) (.put sockets t true)
                (pump c t) (pump t c)
                (recur)))
            (catch Exception _ nil))))))

(defn start!
  "A proxy from a free port to 127.0.0.1:`target-port`: {:port p :cut! f :restore! f :stop! f}."
  [target-port]
  (let [port (with-open [s (ServerSocket. 0)] (.getLocalPort s))
        p {:port port :target-port target-port :sockets (ConcurrentHashMap.) :server (atom nil)}
        cut! (fn []
               (.close ^ServerSocket @(:server p))
               (doseq [^Socket s (keys (:sockets p))] (.close s))
               (.clear ^ConcurrentHashMap (:sockets p)))]
    (listen! p)
    {:port port :cut! cut! :restore! #(listen! p) :stop! cut!}))
