(ns herald.load.impl.agent-coordinator
  "The coordinator's side of distributed load: connects to every agent (hello, clock offset from a few
  pings), splits the rate or the users, starts every share at one agreed instant, gathers the streamed
  interval histograms and the results, and notices an agent that dies."
  (:require [herald.load.impl.agent-report :as report]
            [herald.load.impl.agent-wire :as wire]
            [herald.load.impl.feed-run :as feed-run]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.options :as options]
            [herald.load.impl.progress :as progress]
            [herald.load.impl.protocol :as protocol]
            [herald.load.impl.request :as request]
            [herald.load.impl.schedule :as schedule])
  (:import (java.io BufferedInputStream BufferedOutputStream DataInputStream DataOutputStream)
           (java.net InetSocketAddress Socket)))

(set! *warn-on-reflection* true)

(def ^:private clock-base [(System/currentTimeMillis) (System/nanoTime)])

(defn- now-ms
  "This machine's clock in epoch ms, with sub-millisecond steps (a base read once, then System/nanoTime)."
  ^double []
  (let [[base-ms base-ns] clock-base]
    (+ (double base-ms) (/ (- (System/nanoTime) (long base-ns)) 1e6))))

(defn- fail [a why & [cause]]
  (throw (ex-info (str "agent " (:name a) ": " why) {:type :herald.load/agent-failed :agent (:name a)} cause)))

(defn- connect!
  "Connects to agent `a` and says hello; returns `a` with :socket :in :out :info, or throws naming it."
  [a timeout-ms]
  (let [s (Socket.)]
    (try
      (.connect s (InetSocketAddress. ^String (:host a) (int (:port a))) (int timeout-ms))
      (.setTcpNoDelay s true)
      (.setSoTimeout s (int timeout-ms))
      (let [in (DataInputStream. (BufferedInputStream. (.getInputStream s)))
            out (DataOutputStream. (BufferedOutputStream. (.getOutputStream s)))]
        (wire/write-frame! out {:type :hello :protocol wire/protocol-version :coordinator (str (.getLocalSocketAddress s))})
        (let [m (wire/read-frame in)]
          (case (:type m)
            :welcome (assoc a :socket s :in in :out out :info (:agent m))
            :refused (fail a (str "refused: " (:reason m)))
            (fail a (str "no welcome but " (pr-str (:type m)))))))
      (catch clojure.lang.ExceptionInfo e (.close s) (throw e))
      (catch Exception e (.close s) (fail a (str "cannot connect: " (or (ex-message e) (class e))) e)))))

(defn- measure-clock
  "`a` with :offset-ms (its clock minus ours) and :rtt-ms, from the ping with the shortest round trip."
  [a pings]
  (let [samples (vec (for [_ (range pings)]
                       (let [t0 (now-ms)]
                         (wire/write-frame! (:out a) {:type :ping :t t0})
                         (let [m (wire/read-frame (:in a)) t1 (now-ms)]
                           (when-not (= :pong (:type m)) (fail a (str "no pong but " (pr-str (:type m)))))
                           {:rtt (- t1 t0) :offset (- (double (:agent-ms m)) (/ (+ t0 t1) 2.0))}))))
        best (apply min-key :rtt samples)]
    (assoc a :offset-ms (:offset best) :rtt-ms (:rtt best))))

(defn- split-long
  "`n` split into `k` near-equal parts (the first ones one larger)."
  [n k]
  (let [q (quot (long n) (long k)) r (rem (long n) (long k))]
    (vec (for [i (range k)] (+ q (if (< i r) 1 0))))))

(defn- shares
  "The options of each agent's share: rate mode splits every phase's rate and the connections, feed mode
  the users (each its own seed) and the rate cap. `opts` are validated."
  [mode opts k]
  (case mode
    :rate (let [conns (split-long (:connections opts) k)
                phases (mapv (fn [p] (cond-> (update p :rate #(/ (double %) k)) (:to p) (update :to #(/ (double %) k))))
                             (:phases opts))]
            (for [i (range k)]
              (-> (dissoc opts :phases :rate :hlog :threads)
                  (assoc :schedule phases :connections (conns i)))))
    :feed (let [users (split-long (:users opts) k)]
            (for [i (range k)]
              (cond-> (assoc opts :users (users i) :seed (+ (long (:seed opts)) i))
                (:rate-cap opts) (update :rate-cap #(/ (double %) k)))))))

(defn- check! [mode opts agents]
  (let [k (count agents)
        bad (fn [key why] (throw (ex-info (str "bad option " key " with --agents: " why) {:type :herald.load/bad-option :key key})))]
    (case mode
      :rate (do (when (:script opts) (bad :script "scripts run only in one generator"))
                (when (< (long (:connections opts)) k) (bad :connections (str "fewer connections than the " k " agents"))))
      :feed (do (when (:log-file opts) (bad :log-file "each agent would write its own log"))
                (when (< (long (:users opts)) k) (bad :users (str "fewer users than the " k " agents")))))))

(defn- validated [mode opts]
  (case mode
    :rate (-> (options/validate :rate opts) (protocol/validate (:tls? (request/parse-url (:url opts)))))
    :feed (feed-run/validate opts)))

(defn- read-loop!
  "Reads `a`'s frames into `state` (a map of agent name to its record) until its result, error or death."
  [a state start-at hlog]
  (let [n (:name a) upd #(swap! state update n %)]
    (try
      (loop []
        (let [m (wire/read-frame (:in a))]
          (case (:type m)
            nil (upd #(assoc % :status :died :reason "connection closed before its result"))
            :started (do (upd #(assoc % :start-skew-ms (- (double (:agent-ms m)) (:offset-ms a) start-at))) (recur))
            :interval (let [h (hist/decode (:h m))]
                        (when (and hlog (pos? (.getTotalCount h)))
                          (locking hlog (.setTag h (str n)) (hist/hlog-interval! hlog (:start-s m) (:end-s m) h)))
                        (upd #(update % :intervals (fnil conj []) [(:start-s m) (:end-s m) h]))
                        (recur))
            :result (upd #(assoc % :status :ok :result (:result m)))
            :error (upd #(assoc % :status :error :reason (:message m)))
            (recur))))
      (catch Exception e
        (upd #(assoc % :status :died :reason (str "connection lost: " (or (ex-message e) (class e)))))))))

(defn- goodbye!
  "Says :bye to a connected agent and waits (at most 2 s) for its :bye: the agent has let this coordinator go
  by then, so a run started right after this one finds it free (closing alone left the agent to notice the end
  of the stream later, and a quick next run was refused as busy). An agent that is gone or does not answer is
  left as it is."
  [a]
  (try
    (.setSoTimeout ^Socket (:socket a) 2000)
    (wire/write-frame! (:out a) {:type :bye})
    (loop [] (when-let [m (wire/read-frame (:in a))] (when-not (= :bye (:type m)) (recur))))
    (catch Exception _ nil)))

(defn- run-seconds [mode opts]
  (+ (double (:warmup opts 0))
     (if (= mode :rate) (schedule/total-seconds (:phases opts)) (double (:duration opts)))))

(defn- progress-loop!
  "Until every agent has ended, reports each interval that every live agent has sent, merged."
  [state report target]
  (loop [printed 0]
    (let [recs (vals @state)
          live (remove #(#{:died :error} (:status %)) recs)
          ready (if (seq live) (apply min (map #(count (:intervals %)) live)) 0)]
      (doseq [i (range printed ready)] (report (report/merged-interval recs i target)))
      (when-not (every? :status recs)
        (Thread/sleep 50)
        (recur (long (max printed ready)))))))

(defn execute
  "Runs `mode` (:rate or :feed) with `opts` split over `agents` ([{:host :port :name}]); options as
  herald.load/rate or /feed plus :agent-lead-ms (time from the clock measurement to the start, default 1000)
  and :hlog (one .hlog with every agent's intervals, tagged with its name). Returns the merged result with
  :agents (per-agent figures); its metadata :agent-results holds each agent's own result."
  [mode opts agents]
  (let [opts (validated mode opts)
        _ (check! mode opts agents)
        timeout-ms (long (* 1000 (max 5.0 (double (:timeout opts)))))
        conns (reduce (fn [done a]
                        (conj done (try (connect! a timeout-ms)
                                        (catch Exception e (doseq [c done] (.close ^Socket (:socket c))) (throw e)))))
                      [] agents)]
    (try
      (let [conns (mapv #(measure-clock % 5) conns)
            lead (double (:agent-lead-ms opts 1000))
            start-at (+ (now-ms) lead)
            hlog (when-let [p (:hlog opts)] (hist/hlog-writer p (long start-at)))
            state (atom (into {} (for [a conns] [(:name a) (select-keys a [:name :offset-ms :rtt-ms :info])])))
            shares (vec (shares mode opts (count conns)))
            wire-opts #(dissoc % :agents :agent-lead-ms :on-interval :on-step :on-send :handle-interrupt? :progress :hlog)
            ;; silence longer than this (a few intervals) after the run's end means the agent is gone
            read-timeout (+ timeout-ms (long lead) (long (* 1000 (double (:warmup opts 0))))
                            (long (* 3000 (double (:interval opts 1.0)))))]
        (doseq [[a share] (map vector conns shares)]
          (swap! state assoc-in [(:name a) :share] share)
          (.setSoTimeout ^Socket (:socket a) (int read-timeout))
          (wire/write-frame! (:out a) {:type :run :mode mode :run-id (str "run-" (long start-at)) :opts (wire-opts share)
                                       :start-at (+ start-at (double (:offset-ms a)))}))
        (let [readers (mapv #(future (read-loop! % state start-at hlog)) conns)
              report (or (:on-interval opts) (progress/reporter (:progress opts :auto)))
              target (report/total-target mode opts)
              stop-all #(doseq [a conns] (try (wire/write-frame! (:out a) {:type :stop}) (catch Exception _ nil)))
              wait #(do (progress-loop! state report target) (run! deref readers))]
          (if (:handle-interrupt? opts) (progress/with-interrupt stop-all wait) (wait))
          (when hlog (hist/hlog-close! hlog))
          (run! goodbye! conns)
          (report/result mode opts agents @state (run-seconds mode opts))))
      (finally (doseq [a conns] (.close ^Socket (:socket a)))))))
