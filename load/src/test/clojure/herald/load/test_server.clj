(ns herald.load.test-server
  "Loopback test servers on the JDK's com.sun.net.httpserver: a hello server, a server that stalls once,
  a server answering a chosen status, and a small fake news feed service."
  (:import (com.sun.net.httpserver HttpExchange HttpHandler HttpServer)
           (java.net InetSocketAddress)
           (java.util.concurrent Executors)))

(set! *warn-on-reflection* true)

;; the JDK server writes head and body separately: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms
(System/setProperty "sun.net.httpserver.nodelay" "true")

(defn respond!
  "Sends `status` with body string `body` on exchange `ex`."
  [^HttpExchange ex status ^String body]
  (let [b (.getBytes body "UTF-8")]
    (.add (.getResponseHeaders ex) "Content-Type" "application/json")
    (.sendResponseHeaders ex (int status) (if (zero? (alength b)) -1 (alength b)))
    (with-open [o (.getResponseBody ex)] (.write o b))))

(defn start
  "Starts a server on 127.0.0.1 with `handler` (fn [exchange]) on `threads` threads; returns {:server :port :url}."
  ([handler] (start handler 2))
  ([handler threads]
   (let [s (HttpServer/create (InetSocketAddress. "127.0.0.1" 0) 1024)]
     (.createContext s "/" (reify HttpHandler
                             (handle [_ ex]
                               (try (slurp (.getRequestBody ex)) (handler ex)
                                    (catch InterruptedException _ nil)
                                    (catch Throwable t (.printStackTrace t))
                                    (finally (.close ex))))))
     (.setExecutor s (Executors/newFixedThreadPool (int threads)))
     (.start s)
     (let [port (.getPort (.getAddress s))]
       {:server s :port port :url (str "http://127.0.0.1:" port "/")}))))

(defn stop
  "Stops a server started by `start`."
  [{:keys [^HttpServer server]}]
  (.stop server 0)
  (.shutdownNow ^java.util.concurrent.ExecutorService (.getExecutor server)))

(defmacro with-server
  "Runs body with `sym` bound to a started server map, stopping it afterwards."
  [[sym handler & more] & body]
  `(let [~sym (start ~handler ~@more)]
     (try ~@body (finally (stop ~sym)))))

(defn hello
  "Answers 200 hello."
  [ex]
  (respond! ex 200 "hello"))

(defn stall-once
  "A handler that answers at once, except that the first request arriving `after-ms` after the first
  one sleeps `stall-ms` (on a one-thread server this stalls every request behind it)."
  [after-ms stall-ms]
  (let [first-at (atom nil) stalled (atom false)]
    (fn [ex]
      (let [now (System/currentTimeMillis)]
        (compare-and-set! first-at nil now)
        (when (and (> (- now @first-at) after-ms) (compare-and-set! stalled false true))
          (Thread/sleep (long stall-ms)))
        (respond! ex 200 "ok")))))

(defn overloaded?
  "True when the machine's 1-minute load average exceeds 3 runnable threads per core: timing-sensitive
  tests (the stall shape, rate accuracy) measure the scheduler then, not the generator. HERALD_TEST_TIMING=force
  runs them anyway."
  []
  (let [os (java.lang.management.ManagementFactory/getOperatingSystemMXBean)]
    (and (not= "force" (System/getenv "HERALD_TEST_TIMING"))
         (> (.getSystemLoadAverage os) (* 3.0 (.getAvailableProcessors os))))))

(defmacro when-calm
  "Runs body unless the machine is overloaded, in which case the test reports a skip with the load."
  [& body]
  `(if (overloaded?)
     (clojure.test/do-report {:type :skip
                              :message (format "machine overloaded (load average %.1f on %d cores): timing-sensitive test not run"
                                               (.getSystemLoadAverage (java.lang.management.ManagementFactory/getOperatingSystemMXBean))
                                               (.availableProcessors (Runtime/getRuntime)))})
     (do ~@body)))
