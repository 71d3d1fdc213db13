(ns herald.feed.jobs.perf-sender
  "An instance's request records on their way to Kafka: taken from a herald.flow push input (lock-free, bounded) by one thread, summed per minute x entity x operation into HdrHistograms, and sent as one batch record each every `:send-ms`; a Kafka outage drops batches (counted) and is logged once per state change, never on the request thread."
  (:require [herald.feed.jobs.minutes :as minutes]
            [herald.flow :as flow]
            [herald.flow.spi :as spi])
  (:import (java.nio.charset StandardCharsets)
           (java.util HashMap)
           (java.util.concurrent ConcurrentHashMap)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)
           (org.apache.kafka.clients.producer Callback KafkaProducer ProducerRecord)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- log [& xs] (binding [*out* *err*] (apply println "herald.feed.perf:" xs)))

(def ^:private still-down-ms 60000)

(defn- reachable!
  "Records whether the last send reached Kafka; logs a change of state (and every minute while down)."
  [{:keys [state ^AtomicLong dropped topic log]} ok? ^String why]
  (let [now (System/currentTimeMillis)
        [old new] (swap-vals! state (fn [{:keys [up? logged] :as s}]
                                      (cond (not= up? ok?) {:up? ok? :logged now :change true}
                                            (and (not ok?) (>= (- now (long logged)) still-down-ms)) {:up? false :logged now :change true}
                                            :else (dissoc s :change))))]
    (when (:change new)
      (cond ok? (log "request records reach Kafka topic" topic "again;" (.get dropped) "dropped so far")
            (:up? old) (log "request records cannot reach Kafka topic" topic "(" why "); dropping and counting them")
            :else (log "request records still cannot reach Kafka topic" topic ";" (.get dropped) "dropped so far")))))

(defn- bytes-of ^bytes [x]
  (let [^String s (binding [*print-length* nil *print-level* nil] (pr-str x))]
    (.getBytes s StandardCharsets/UTF_8)))

(def ^:private sum-fn (reify java.util.function.BiFunction (apply [_ x y] (+ (long x) (long y)))))

(defn- add-record! [^HashMap acc {:keys [entity operation us status at]}]
  (let [k [(quot (long at) 60000) entity operation]
        ^objects a (or (.get acc k)
                       (let [a (object-array [(Histogram. 3) (HashMap.) (long-array 1)])] (.put acc k a) a))]
    (.recordValue ^Histogram (aget a 0) (max 0 (long us)))
    (.merge ^HashMap (aget a 1) status 1 sum-fn)
    (let [^longs t (aget a 2)] (aset t 0 (max (aget t 0) (long at))))))

(defn- batch [[_ entity operation] ^objects a src s]
  {:entity entity :operation operation :at (aget ^longs (aget a 2) 0)
   :histogram (minutes/encode-histogram (aget a 0)) :statuses (into {} ^HashMap (aget a 1)) :src src :seq s})

(defn- send-all!
  "Sends every summed batch of `acc` (one seq number for all). A send refused at once (no metadata, full
  buffer: nothing was written) keeps the rest for the next round unless older than `max-age-ms`; a send
  that fails later drops its requests (counted; a retry could count them twice)."
  [{:keys [^KafkaProducer producer ^String topic src ^AtomicLong seq-no ^ConcurrentHashMap awaiting
           ^AtomicLong dropped ^AtomicLong send-errors max-age-ms] :as sd} ^HashMap acc]
  (let [s (.incrementAndGet seq-no)
        now (System/currentTimeMillis)]
    (loop [ks (sort-by first (.keySet acc))]       ; oldest minute first: the job's watermark follows the newest
      (when-let [[_ entity operation :as k] (first ks)]
        (let [^objects a (.get acc k)
              n (.getTotalCount ^Histogram (aget a 0))
              sent (long-array [s now])
              _ (.put awaiting k sent)
              sent? (try (.send producer (ProducerRecord. topic (bytes-of [entity operation]) (bytes-of (batch k a src s)))
                                (reify Callback
                                  (onCompletion [_ _ e]
                                    (if e
                                      (do (.addAndGet dropped n) (.incrementAndGet send-errors)
                                          (.remove awaiting k sent) (reachable! sd false (str e)))
                                      (reachable! sd true nil)))))
                         true
                         (catch Exception e (.remove awaiting k sent) (reachable! sd false (str e)) false))]
          (if sent?
            (do (.remove acc k) (recur (rest ks)))
            (doseq [k ks :let [^objects a (.get acc k)]
                    :when (> (- now (* (inc (long (first k))) 60000)) (long max-age-ms))]
              (.addAndGet dropped (.getTotalCount ^Histogram (aget a 0)))
              (.remove acc k))))))))

(def ^:private max-idle-sleep-ms
  "The longest the sender sleeps after finding the input empty: `busy-sleep-ms` after a poll that found
  requests, doubling while idle. A fixed 5 ms woke it 200 times a second on an idle instance (~1% of a core on a
  starved machine, bench/results/feed-scale.md)."
  40)

(def ^:private busy-sleep-ms
  "The sleep after a poll that found requests (but fewer than a full poll): the records wait in the lock-free
  push input (100,000 by default) and go out once a `:send-ms` anyway, so the sender need not take them as they come.
  Without it, under load the sender polled again at once and then slept 5 ms, ~150 wake-ups a second for a few
  records each (2.3% of a loaded instance's CPU in a profile of 2026-11-26)."
  20)

(defn- run-loop! [{:keys [input ^AtomicLong drained ^AtomicLong sent-through ^AtomicBoolean flush-wanted send-ms] :as sd}]
  (let [acc (HashMap.) max-n 4096]
    (loop [next-send (+ (System/currentTimeMillis) (long send-ms)) idle-ms (long busy-sleep-ms)]
      (let [b (spi/-poll! input max-n 0)
            taken (.addAndGet drained (count b))
            now (System/currentTimeMillis)]
        (run! #(add-record! acc %) b)
        (cond
          (or (nil? b) (>= now next-send) (.getAndSet flush-wanted false))
          (do (send-all! sd acc)
              (when (.isEmpty acc) (.set sent-through taken))
              (when-not (nil? b) (recur (+ now (long send-ms)) (long busy-sleep-ms))))
          (>= (count b) max-n) (recur next-send (long busy-sleep-ms))
          :else
          (do (Thread/sleep (max 1 (min (long idle-ms) (- (long next-send) now))))
              (recur next-send (if (empty? b) (min (* 2 (long idle-ms)) (long max-idle-sleep-ms)) (long busy-sleep-ms)))))))))

(defn sender
  "Starts the sender of push input `in` (herald.flow.plugin/push-input, filled with herald.flow/offer!) to `topic` through `producer`: `src` names this instance in its
  batches. `opts`: `:send-ms`, `:max-age-ms` (how long after its minute's end a batch that could not be
  sent is kept for another try), `:log` (fn of the words of a log line; default: a line on stderr).
  Returns its state for `flushed?`, `request-flush!`, `stats`, `awaiting`."
  [in ^KafkaProducer producer topic src {:keys [send-ms max-age-ms] :as opts}]
  (let [sd {:input in
            :producer producer :topic topic :src src :send-ms send-ms :max-age-ms max-age-ms
            :seq-no (AtomicLong.) :awaiting (ConcurrentHashMap.) :dropped (AtomicLong.) :send-errors (AtomicLong.)
            :drained (AtomicLong.) :sent-through (AtomicLong.) :flush-wanted (AtomicBoolean.)
            :state (atom {:up? true :logged 0}) :done (promise) :log (:log opts log)}
        t (Thread. ^Runnable (fn []
                               (try (run-loop! sd)
                                    (catch Throwable e ((:log sd) "the request record sender stopped:" (str e)))
                                    (finally (deliver (:done sd) true))))
                   "herald-feed-perf-sender")]
    (.setDaemon t true)
    (.start t)
    sd))

(defn request-flush!
  "Asks the sender to send what it holds now; returns how many records must have gone for that."
  ^long [{:keys [input ^AtomicBoolean flush-wanted]}]
  (let [target (long (:accepted (flow/push-stats input)))]
    (.set flush-wanted true)
    target))

(defn flushed?
  "True once the sender has sent (or dropped) the first `target` records taken."
  [{:keys [^AtomicLong sent-through]} ^long target]
  (>= (.get sent-through) target))

(defn awaiting
  "The batches sent and not yet seen in the figures: a ConcurrentHashMap [minute entity operation] ->
  long-array [seq sent-ms] (the caller removes what it saw)."
  ^ConcurrentHashMap [sd]
  (:awaiting sd))

(defn stats
  "{:dropped n (requests whose batch could not be sent) :send-errors n (batches)}."
  [{:keys [^AtomicLong dropped ^AtomicLong send-errors]}]
  {:dropped (.get dropped) :send-errors (.get send-errors)})

(defn close!
  "Closes the input and waits up to `timeout-ms` for the sender to send what it holds; true if it did."
  [{:keys [input done]} timeout-ms]
  (flow/close-input! input)
  (boolean (deref done timeout-ms false)))
