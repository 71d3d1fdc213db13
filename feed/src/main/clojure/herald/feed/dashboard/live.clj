(ns herald.feed.dashboard.live
  "The dashboard's live updates over a herald.http WebSocket: one ticker thread computes a snapshot every
  `:interval-ms` while someone watches and hands it to every viewer with a non-blocking send. No thread waits
  for a browser: a viewer whose previous update is still unsent skips updates (it gets the newest once it reads
  again) and is closed (1008) after `:stall-ms`, its connection dropped if even the close cannot be sent; a
  gone viewer leaves on close. At most `:max-viewers` at once (503 before the upgrade, 1013 after a race)."
  (:require [herald.feed.dashboard :as dash]
            [herald.feed.errors :as err]
            [herald.http :as http])
  (:import (herald.http.websocket HeraldWebSocket)
           (io.netty.channel Channel)
           (java.util.concurrent CompletableFuture ConcurrentHashMap)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(set! *warn-on-reflection* true)

;; a viewer: {:socket HeraldWebSocket :pending CompletableFuture-of-its-last-send-or-nil :sent-ms t :closing-ms t-or-0}

(defn hub
  "A hub of viewers for `env` (the routes' env) with dashboard `opts` (herald.feed.dashboard/options).
  `:snapshot` (fn [env now-ms minutes] bytes) and `:clock` may be given for tests."
  [env opts]
  (merge {:env env :opts opts :viewers (ConcurrentHashMap.) :running (AtomicBoolean.)
          :ticks (AtomicLong.) :sent (AtomicLong.) :skipped (AtomicLong.) :evicted (AtomicLong.)
          :refused (AtomicLong.) :clock #(System/currentTimeMillis)
          ;; the points of closed minutes, kept between updates (only the ticker and on-open write it)
          :snapshot (let [cache (atom {})] (fn [env now minutes] (dash/snapshot-json env now minutes cache)))}
         (select-keys opts [:snapshot :clock])))

(defn stats
  "The hub's counters: {:viewers :ticks :sent :skipped :evicted :refused :running}."
  [{:keys [^ConcurrentHashMap viewers ^AtomicBoolean running] :as h}]
  (into {:viewers (.size viewers) :running (.get running)}
        (for [k [:ticks :sent :skipped :evicted :refused]] [k (.get ^AtomicLong (get h k))])))

(defn- text ^String [^bytes b] (String. b java.nio.charset.StandardCharsets/UTF_8))

(defn- send! [{:keys [^ConcurrentHashMap viewers ^AtomicLong sent clock]} ^HeraldWebSocket s ^String msg]
  (let [f (.sendAsync s msg)]
    (.incrementAndGet sent)
    (.computeIfPresent viewers s
                       (reify java.util.function.BiFunction
                         (apply [_ _ v] (assoc v :pending f :sent-ms (long (clock))))))))

(defn- evict!
  "Starts closing a stalled viewer (1008); drops its connection when the close itself is stuck."
  [{:keys [^ConcurrentHashMap viewers ^AtomicLong evicted opts clock]} v]
  (let [^HeraldWebSocket s (:socket v) now (long (clock))]
    (if (zero? (long (:closing-ms v)))
      (do (.incrementAndGet evicted)
          (.replace viewers s v (assoc v :closing-ms now))
          (try (http/ws-close s 1008 "too slow: the dashboard's updates were not read") (catch Exception _ nil)))
      (when (> (- now (long (:closing-ms v))) (long (:stall-ms opts)))
        ;; even the close frame cannot reach it: end the connection (its pending writes fail, on-close follows)
        (.remove viewers s)
        (.close ^Channel (.channel s))))))

(defn- tick!
  "One update: a snapshot, sent to every viewer whose previous update has gone out."
  [{:keys [env opts ^ConcurrentHashMap viewers ^AtomicLong ticks ^AtomicLong skipped snapshot clock] :as h}]
  (.incrementAndGet ticks)
  (let [msg (delay (text (snapshot env (clock) (:minutes opts))))
        now (long (clock))]
    (doseq [v (vec (.values viewers))]
      (let [^CompletableFuture f (:pending v)]
        (cond
          (pos? (long (:closing-ms v))) (evict! h v)
          (or (nil? f) (.isDone f)) (when (http/ws-open? (:socket v)) (send! h (:socket v) @msg))
          (> (- now (long (:sent-ms v))) (long (:stall-ms opts))) (evict! h v)
          :else (.incrementAndGet skipped))))))

(defn- run-ticker [{:keys [^ConcurrentHashMap viewers ^AtomicBoolean running opts] :as h}]
  (loop []
    (if (.isEmpty viewers)
      ;; stop, unless a viewer came between the look and the stop (it saw running = true and started no ticker)
      (do (.set running false)
          (when (and (not (.isEmpty viewers)) (.compareAndSet running false true))
            (recur)))
      (do (try (tick! h)
               (catch Throwable t
                 (binding [*out* *err*] (println "herald.feed: dashboard update failed:" (str t)))))
          (try (Thread/sleep (long (:interval-ms opts))) (catch InterruptedException _ nil))
          (recur)))))

(defn- ensure-ticker! [{:keys [^AtomicBoolean running] :as h}]
  (when (.compareAndSet running false true)
    (doto (Thread. ^Runnable #(run-ticker h) "herald-feed-dashboard")
      (.setDaemon true)
      (.start))))

(defn listener
  "The WebSocket listener of one viewer: it joins on open (or is closed 1013 when `:max-viewers` are
  watching), gets a snapshot at once and then every tick, and leaves on close. Messages from it are ignored."
  [{:keys [^ConcurrentHashMap viewers opts env snapshot clock ^AtomicLong refused] :as h}]
  {:on-open (fn [^HeraldWebSocket s]
              (if-not (locking viewers
                        (when (< (.size viewers) (long (:max-viewers opts)))
                          (.put viewers s {:socket s :pending nil :sent-ms (long (clock)) :closing-ms 0})
                          true))
                (do (.incrementAndGet refused)
                    (http/ws-close s 1013 "too many dashboard viewers: try again later"))
                (do (send! h s (text (snapshot env (clock) (:minutes opts))))
                    (ensure-ticker! h))))
   :on-message (fn [_ _])
   :on-close (fn [s _ _] (.remove viewers s))})

(defn- upgrade? [req]
  (some-> ^String (get (:headers req) "upgrade") (.equalsIgnoreCase "websocket")))

(defn handler
  "GET /dashboard/live: a WebSocket upgrade joins hub `h`; a plain GET is a 426 naming the Upgrade header, and
  one beyond `:max-viewers` a 503 with Retry-After."
  [{:keys [^ConcurrentHashMap viewers opts ^AtomicLong refused] :as h}]
  (fn [req]
    (cond
      (not (upgrade? req))
      (err/response 426 "GET /dashboard/live is a WebSocket: send Upgrade: websocket (or read GET /dashboard/data)"
                    :field "Upgrade" :value (get (:headers req) "upgrade")
                    :headers {"upgrade" "websocket" "connection" "Upgrade"})
      (>= (.size viewers) (long (:max-viewers opts)))
      (do (.incrementAndGet refused)
          (err/response 503 (str "too many dashboard viewers (" (:max-viewers opts) "): try again later")
                        :headers {"retry-after" "5"}))
      :else {:ring.websocket/listener (listener h)})))
