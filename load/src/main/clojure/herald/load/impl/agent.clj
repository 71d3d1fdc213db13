(ns herald.load.impl.agent
  "A load generator agent: listens on a TCP port for one coordinator at a time (herald.load.impl.agent-wire's
  protocol), runs the rate or feed share it is given at the instant agreed, streams its interval histograms
  back and sends its result; a second coordinator is refused while one is connected."
  (:require [clojure.java.io :as io]
            [herald.load.impl.feed-run :as feed-run]
            [herald.load.impl.run :as run]
            [herald.load.impl.agent-wire :as wire]
            [herald.load.impl.histogram :as hist])
  (:import (com.sun.net.httpserver HttpExchange HttpHandler HttpServer)
           (java.io BufferedInputStream BufferedOutputStream DataInputStream DataOutputStream)
           (java.net InetAddress InetSocketAddress ServerSocket Socket SocketException)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- sleep-until!
  "Sleeps until this machine's clock reads epoch ms `at` (the last milliseconds spent spinning), or until
  `stop?` says so."
  [at stop?]
  (loop []
    (let [left (- (double at) (System/currentTimeMillis))]
      (when (and (pos? left) (not (stop?)))
        (if (> left 5.0) (Thread/sleep (long (- left 3.0))) (Thread/onSpinWait))
        (recur)))))

(defn- agent-info []
  {:host (try (.getHostName (InetAddress/getLocalHost)) (catch Exception _ "unknown"))
   :cores (.availableProcessors (Runtime/getRuntime))
   :jvm (str (System/getProperty "java.vm.name") " " (System/getProperty "java.runtime.version"))})

(defn- hlog-for [hlog-dir run-id start-ms]
  (when hlog-dir (hist/hlog-writer (str (io/file hlog-dir (str run-id ".hlog"))) start-ms)))

(defn- run-share!
  "Runs one share (a :run message) and sends its frames on `out`; `stop` is an atom that stops it early."
  [out {:keys [mode opts start-at run-id]} stop hlog-dir]
  (let [send! #(wire/write-frame! out %)]
    (try
      (let [hlog (hlog-for hlog-dir (or run-id "run") (long start-at))
            hooks {:progress :quiet
                   :handle-interrupt? false
                   ;; the engine is built first, then waits for the instant: its set-up is not in the skew
                   :before-start #(sleep-until! start-at (fn [] @stop))
                   :stop-when #(deref stop)
                   :on-start #(send! {:type :started :agent-ms (System/currentTimeMillis)})
                   :on-histogram (fn [s e ^Histogram h]
                                   (when (and hlog (pos? (.getTotalCount h))) (hist/hlog-interval! hlog s e h))
                                   (send! {:type :interval :start-s s :end-s e :h (hist/encode h)}))}
            ;; a coordinator sends data only: nothing that names a file here or runs code
            opts (merge (dissoc opts :hlog :log-file :script :on-interval :on-step :on-send :before-start) hooks)
            r (try (case mode
                     :rate (run/execute :rate opts)
                     :feed (feed-run/execute opts))
                   (finally (when hlog (hist/hlog-close! hlog))))]
        (send! {:type :result :result r}))
      (catch SocketException _ nil)
      (catch Exception e
        (try (send! {:type :error :message (str (ex-message e)) :error-type (:type (ex-data e))})
             (catch Exception _ nil))))))

(defn- greet!
  "Answers a hello: true when this coordinator may drive the agent (it is then `busy`'s owner)."
  [out hello busy who]
  (cond
    (not= :hello (:type hello))
    (do (wire/write-frame! out {:type :refused :reason "the first message must be a hello"}) false)
    (not= wire/protocol-version (:protocol hello))
    (do (wire/write-frame! out {:type :refused :reason (str "protocol " (pr-str (:protocol hello)) " not supported: this agent speaks "
                                                            wire/protocol-version)})
        false)
    (not (compare-and-set! busy nil who))
    (do (wire/write-frame! out {:type :refused :reason (str "busy: driven by coordinator " @busy)}) false)
    :else (do (wire/write-frame! out {:type :welcome :protocol wire/protocol-version :agent (agent-info)}) true)))

(defn- serve-coordinator!
  "Talks to one coordinator until it goes: pings, one run at a time, stop. Its going stops a run in progress."
  [^Socket s busy hlog-dir log]
  (let [in (DataInputStream. (BufferedInputStream. (.getInputStream s)))
        out (DataOutputStream. (BufferedOutputStream. (.getOutputStream s)))
        who (str (.getRemoteSocketAddress s))
        stop (atom false)
        running (atom nil)]
    (try
      (when (greet! out (wire/read-frame in) busy who)
        (log (str "coordinator " who " connected"))
        (loop []
          (when-let [m (wire/read-frame in)]
            (case (:type m)
              :ping (wire/write-frame! out {:type :pong :t (:t m) :agent-ms (System/currentTimeMillis)})
              :run (if (some-> @running future-done? not)
                     (wire/write-frame! out {:type :error :message "a run is already in progress"})
                     (do (reset! stop false)
                         (reset! running (future (run-share! out m stop hlog-dir)))))
              :stop (reset! stop true)
              ;; the coordinator is done: free the agent for the next one, then say so (it waits for this)
              :bye (do (reset! stop true)
                       (some-> @running deref)
                       (compare-and-set! busy who nil)
                       (wire/write-frame! out {:type :bye}))
              (wire/write-frame! out {:type :error :message (str "unknown message type " (:type m))}))
            (when-not (= :bye (:type m)) (recur)))))
      (catch Exception e (log (str "coordinator " who ": " (ex-message e))))
      (finally
        (reset! stop true)
        (some-> @running deref)
        (compare-and-set! busy who nil)
        (log (str "coordinator " who " gone"))
        (.close s)))))

(defn- warm-up!
  "Exercises the engine once (half a second at 200/s against a loopback JDK server of its own), so that a
  coordinator's first run starts on time rather than loading classes."
  []
  (let [srv (doto (HttpServer/create (InetSocketAddress. "127.0.0.1" 0) 64)
              (.createContext "/" (reify HttpHandler
                                    (handle [_ ex]
                                      (let [^HttpExchange ex ex]
                                        (.readAllBytes (.getRequestBody ex))
                                        (.sendResponseHeaders ex 200 -1)
                                        (.close ex)))))
              (.start))]
    (try (run/execute :rate {:url (str "http://127.0.0.1:" (.getPort (.getAddress srv)) "/") :rate 200 :duration 0.5
                     :connections 2 :progress :quiet})
         (finally (.stop srv 0)))))

(defn serve!
  "Starts an agent listening on `:host` (default 0.0.0.0) and `:port` (0: any free port). Options:

  | key       | type   | default | meaning |
  |-----------|--------|---------|---------|
  | :host     | string | 0.0.0.0 | address to listen on |
  | :port     | int    | 0       | TCP port (0 picks a free one) |
  | :hlog-dir | path   | nil     | also write each run's interval histograms to DIR/RUN-ID.hlog (this agent's own record) |
  | :log      | fn     | nil     | called with a line per coordinator connected or gone |

  | :warm-up? | boolean | true    | exercise the engine once before listening (see `warm-up!`) |

  Returns {:port :close (fn [])}; close stops listening (a run in progress finishes)."
  [{:keys [host port hlog-dir log warm-up?] :or {warm-up? true}}]
  (when warm-up? (warm-up!))
  (let [ss (doto (ServerSocket.) (.setReuseAddress true)
                 (.bind (InetSocketAddress. (str (or host "0.0.0.0")) (int (or port 0))) 16))
        busy (atom nil)
        log (or log (fn [_]))]
    (-> (Thread. ^Runnable (fn []
                             (while (not (.isClosed ss))
                               (try (let [s (.accept ss)]
                                      (.setTcpNoDelay s true)
                                      (-> (Thread. ^Runnable #(serve-coordinator! s busy hlog-dir log) "herald-load-agent-conn")
                                          (doto (.setDaemon true)) .start))
                                    (catch SocketException _ nil))))
                 "herald-load-agent")
        (doto (.setDaemon true)) .start)
    {:port (.getLocalPort ss) :close #(.close ss)}))
