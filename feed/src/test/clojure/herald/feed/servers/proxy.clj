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

(defn- listen!
  "Binds the proxy's port and starts its accept loop; the loop's thread goes into (:acceptor p)."
  [{:keys [port target-port ^ConcurrentHashMap sockets server acceptor]}]
  (let [ss (doto (ServerSocket.) (.setReuseAddress true) (.bind (InetSocketAddress. "127.0.0.1" (int port))))]
    (reset! server ss)
    (reset! acceptor
            (Thread/startVirtualThread
             (fn []
               (try (loop []
                      (let [c (.accept ss)]
                        (.put sockets c true)
                        (let [t (try (Socket. "127.0.0.1" (int target-port)) (catch Exception e (.close c) (throw e)))]
                          (.put sockets t true)
                          (pump c t) (pump t c)
                          (recur))))
                    (catch Exception _ nil)))))))

(defn- cut!
  "Closes the listening socket, waits until the accept loop has ended (a connection it was accepting at that moment
  is registered before the loop ends, so none escapes the cut), then closes every proxied connection."
  [{:keys [server acceptor ^ConcurrentHashMap sockets]}]
  (.close ^ServerSocket @server)
  (some-> ^Thread @acceptor (.join 5000))
  (doseq [^Socket s (keys sockets)] (.close s))
  (.clear sockets))

(defn start!
  "A proxy from a free port to 127.0.0.1:`target-port`: {:port p :cut! f :restore! f :stop! f}."
  [target-port]
  (let [port (with-open [s (ServerSocket. 0)] (.getLocalPort s))
        p {:port port :target-port target-port :sockets (ConcurrentHashMap.) :server (atom nil) :acceptor (atom nil)}]
    (listen! p)
    {:port port :cut! #(cut! p) :restore! #(listen! p) :stop! #(cut! p)}))
