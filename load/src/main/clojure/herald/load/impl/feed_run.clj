(ns herald.load.impl.feed-run
  "Runs the news feed workload for a duration (or until Ctrl-C) and builds its result map."
  (:require [herald.load.impl.aggregate :as agg]
            [herald.load.impl.feed :as feed]
            [herald.load.impl.feed-record :as rec]
            [herald.load.impl.histogram :as hist]
            [herald.load.impl.meta :as meta]
            [herald.load.impl.options :as options]
            [herald.load.impl.progress :as progress]
            [herald.load.impl.protocol :as protocol]
            [herald.load.impl.request :as request])
  (:import (herald.load.client Transport)
           (io.netty.channel EventLoopGroup)
           (java.util.concurrent TimeUnit)
           (org.HdrHistogram Histogram Recorder)))

(set! *warn-on-reflection* true)

(def defaults
  "The feed workload defaults: the reference tester's, plus herald's reader share, rate cap and shares of
  edits, deletes and single-post reads (0: the reference mix)."
  {:host "127.0.0.1" :port 8080 :users 3 :search-share 0.1 :reader-share 0.0 :batch-size 10
   :min-friends 2 :max-friends 3 :subject-words 5 :story-words 150 :posts-per-user 10 :searches-per-user 5
   :new-connection? false :body-format :json :rate-cap nil :duration 60 :timeout 10 :seed 1
   :progress :auto :interval 1.0 :handle-interrupt? false :threads 1 :https? false :warmup 0
   :jwt-secret nil :jwt-issuer nil :jwt-audience nil :edit-share 0.0 :delete-share 0.0 :read-post-share 0.0})

(defn- check-secret
  "`m` when its :jwt-secret is nil or at least 32 bytes; else a bad option that names the key, never the secret."
  [m]
  (let [s (:jwt-secret m)]
    (when-not (or (nil? s) (and (string? s) (>= (alength (.getBytes ^String s "UTF-8")) 32)))
      (throw (ex-info "bad option :jwt-secret: must be an HS256 secret of at least 32 bytes (256 bits)"
                      {:type :herald.load/bad-option :key :jwt-secret})))
    m))

(defn validate
  "Fills the defaults into feed options and checks them."
  [opts]
  (let [share? #(and (number? %) (<= 0.0 (double %) 1.0))
        nat? #(and (integer? %) (not (neg? (long %))))
        m (merge defaults opts)]
    (-> m
        (options/check :host string? "must be a host name or address")
        (options/check :port #(and (integer? %) (< 0 (long %) 65536)) "must be a TCP port")
        (options/check :users #(and (integer? %) (pos? (long %))) "must be a positive integer")
        (options/check :search-share share? "must be a number from 0 to 1")
        (options/check :reader-share #(and (share? %) (<= (+ (double %) (double (:search-share m))) 1.0))
                       "must be from 0 to 1, and with :search-share at most 1")
        (options/check :edit-share share? "must be a number from 0 to 1")
        (options/check :delete-share #(and (share? %) (<= (+ (double %) (double (:edit-share m))) 1.0))
                       "must be from 0 to 1, and with :edit-share at most 1")
        (options/check :read-post-share #(and (share? %) (<= (+ (double %) (double (:edit-share m)) (double (:delete-share m))) 1.0))
                       "must be from 0 to 1, and with :edit-share and :delete-share at most 1")
        (options/check :batch-size #(and (integer? %) (pos? (long %))) "must be a positive integer")
        (options/check :min-friends nat? "must be an integer >= 0")
        (options/check :max-friends #(and (nat? %) (>= (long %) (long (:min-friends m)))) "must be an integer >= :min-friends")
        (options/check :subject-words nat? "must be an integer >= 0")
        (options/check :story-words nat? "must be an integer >= 0")
        (options/check :posts-per-user nat? "must be an integer >= 0")
        (options/check :searches-per-user #(and (integer? %) (pos? (long %))) "must be a positive integer")
        (options/check :body-format #{:json :form} "must be :json or :form")
        (options/check :rate-cap #(or (nil? %) (and (number? %) (pos? (double %)))) "must be nil or a positive number of requests/s")
        (options/check :duration #(and (number? %) (pos? (double %))) "must be a positive number of seconds")
        (options/check :timeout #(and (number? %) (pos? (double %))) "must be a positive number of seconds")
        (options/check :warmup #(and (number? %) (not (neg? (double %)))) "must be a number of seconds >= 0")
        (options/check :seed integer? "must be an integer")
        (options/check :progress #{:auto :text :json :quiet} "must be one of :auto :text :json :quiet")
        (options/check :https? boolean? "must be true or false")
        check-secret
        (options/check :jwt-issuer #(or (nil? %) (string? %)) "must be nil or a string")
        (options/check :jwt-audience #(or (nil? %) (string? %)) "must be nil or a string")
        (protocol/validate (boolean (:https? m))))))

(defn- interval-loop
  "Reports every interval until `stop-at` or a stop; each interval's histogram is the one before it, recycled
  (`h0`: the first, from `interval`), so the recorder's histograms keep their size and never resize while
  recording (hooks copy what they keep)."
  [r ^Recorder interval ^Histogram h0 stop-at stopped? report]
  (loop [intervals [] t0 (System/nanoTime) last-t 0.0 last-err 0 prev h0]
    (let [wait (min (long (* 1e9 (double (:interval r)))) (max 0 (- (long stop-at) (System/nanoTime))))]
      (when (pos? wait) (.sleep TimeUnit/NANOSECONDS wait)))
    (let [h (.getIntervalHistogram interval ^Histogram prev)
          now (System/nanoTime)
          t (/ (- now t0) 1e9)
          errs (.get ^java.util.concurrent.atomic.AtomicLong (:interval-errors r))
          entry {:t (/ (Math/round (* 1000.0 t)) 1000.0) :count (.getTotalCount h)
                 :rate (/ (.getTotalCount h) (max 1e-9 (- t last-t))) :target (:rate-cap r) :errors (- errs last-err)
                 :latency (hist/brief h)}
          done? (or (>= now (long stop-at)) @stopped? (boolean (some-> (:stop-when r) (apply []))))]
      (when-let [f (:on-histogram r)] (f last-t t h))
      (report entry)
      (if done? [(conj intervals entry) (- now t0)] (recur (conj intervals entry) t0 t errs h)))))

(defn execute
  "Runs the feed workload with `opts` (see herald.load/feed); returns the result map."
  [opts]
  (let [opts (validate opts)
        address (request/resolve-host (:host opts) :host (:host opts))
        target (protocol/target opts address (:port opts) (:host opts) (:https? opts) (:timeout opts))
        stop (atom false)
        group ^EventLoopGroup (Transport/group (int (:threads opts)))
        warmup-ms (long (* 1000 (double (:warmup opts))))
        _ (when-let [f (:before-start opts)] (f))
        ;; requests started during the warm-up (JIT, caches, connections) are sent but not recorded; the
        ;; warm-up is timed from the moment the users run (starting them may take long on a busy machine)
        r (rec/recorder (:log-file opts) (if (pos? warmup-ms) Long/MAX_VALUE Long/MIN_VALUE))
        report (or (:on-interval opts) (progress/reporter (:progress opts)))]
    (try
      (let [users (feed/start-users! opts target group r stop)
            _ (when-let [f (:on-start opts)] (f))
            warm-until (+ (System/nanoTime) (* 1000000 warmup-ms))
            _ (when (pos? warmup-ms) (rec/record-from! r (+ (System/currentTimeMillis) warmup-ms)))
            body (fn []
                   (while (and (not @stop) (< (System/nanoTime) warm-until)) (Thread/sleep 20))
                   (interval-loop (assoc opts :interval-errors (:interval-errors r)) (:interval r)
                                  (.getIntervalHistogram ^Recorder (:interval r))
                                  (+ (System/nanoTime) (long (* 1e9 (double (:duration opts))))) stop report))
            [intervals elapsed] (if (:handle-interrupt? opts) (progress/with-interrupt #(reset! stop true) body) (body))
            _ (reset! stop true)
            _ (feed/join-users! users (:timeout opts))
            _ (rec/close! r)
            total (rec/total-histogram r)
            seconds (/ (double elapsed) 1e9)
            errors (rec/error-counts r)]
        {:herald.load/result 1
         :mode :feed
         ;; the secret never reaches a result file or a report
         :meta (meta/run-meta (cond-> (dissoc opts :on-interval :on-histogram :on-start :stop-when :before-start) (:jwt-secret opts) (assoc :jwt-secret "(hidden)")))
         :url (str (if (:https? opts) "https://" "http://") (:host opts) ":" (:port opts) "/")
         :protocol (protocol/protocol-name opts (:https? opts))
         :rate {:target (some-> (:rate-cap opts) double) :achieved (/ (.getTotalCount total) (max 1e-9 seconds))}
         :requests (.getTotalCount total)
         :duration-s seconds
         :connections (:users opts)
         :roles (:roles users)
         :errors errors
         :status (rec/status-counts r)
         :operations (rec/operations r)
         :latency (hist/summary total)
         :histograms {:latency (hist/encode total)}
         :intervals intervals
         :per-minute (agg/rows (:minutes r))
         :warnings (cond-> []
                     (pos? (reduce + (vals errors))) (conj (format "%d requests failed: %s" (reduce + (vals errors)) (pr-str (into {} (filter (comp pos? val)) errors)))))})
      (finally
        (rec/close! r)
        (.syncUninterruptibly (.shutdownGracefully group 0 200 TimeUnit/MILLISECONDS))))))
