(ns herald.feed.events.dead-letter
  "The dead-letter topic of the Kafka log (`<prefix>posts-dead-letter`): what the fan-out and indexing jobs could not apply, as an EDN envelope with its cause in headers, counted per job; read back by the re-drive (herald.feed.events.redrive)."
  (:require [herald.feed.events.kafka :as kafka])
  (:import (herald.flow.log RecordCodec)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent ConcurrentHashMap ExecutionException TimeUnit TimeoutException)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.kafka.clients.consumer ConsumerRecord)
           (org.apache.kafka.clients.producer KafkaProducer ProducerRecord)
           (org.apache.kafka.common KafkaException)
           (org.apache.kafka.common.header Header)))

(set! *warn-on-reflection* true)

;; A dead letter is one record of the dead-letter topic (one partition), keyed by the job's name (`feed-fan-out`,
;; `feed-index`). Its value is EDN text, the envelope:
;;   {:job :feed-fan-out :task :inbound :error "the exception as text" :error-class "..." :error-message "..." :at ms
;;    :segment <the record of the posts topic, as the job read it>        ; absent for an undecodable record
;;    :bytes "<base64 of the record>"                                      ; only for an undecodable record: its
;;    :bytes-length n                                                      ; first 64 KiB, and its length when longer
;;    :attempts n :first-failure-at ms :last-failure-at ms}               ; only for a store write given up
;; and its headers repeat the cause for tools that do not read EDN (all UTF-8 text): herald.job, herald.task,
;; herald.error.class, herald.error.message, herald.attempts, herald.first-failure-at, herald.last-failure-at,
;; herald.post-id (those that apply).

(defn post-of
  "The post a posts-topic record (a dead letter's `:segment`) is about: its post, edit or delete; or nil."
  [segment]
  (when (map? segment) (some segment [:post :edit :delete])))

(def ^:private max-copied-bytes
  "The most of an undecodable record a dead letter carries: whole, a record near the posts topic's 1 MB limit made
  a dead letter (base64) over the producer's max.request.size, which no attempt could ever write, and the
  partition waited behind it for ever."
  65536)

(defn envelope
  "The dead letter of herald.flow's error map `{:task :segment :exception ...}` of job `job-name`, at `now`."
  [job-name {:keys [task segment ^Throwable exception] :as err} now]
  (let [^bytes raw (:bytes (ex-data exception))
        cut? (and raw (> (alength raw) (long max-copied-bytes)))]
    (cond-> {:job job-name :task task :error (str exception) :error-class (.getName (class exception))
             :error-message (str (ex-message exception)) :at now}
      (some? segment) (assoc :segment segment)
      raw (assoc :bytes (.encodeToString (java.util.Base64/getEncoder)
                                         (if cut? (java.util.Arrays/copyOf raw (int max-copied-bytes)) raw)))
      cut? (assoc :bytes-length (alength raw))
      (:attempts err) (merge (select-keys err [:attempts :first-failure-at :last-failure-at])))))

(defn headers
  "[name value-string] of the headers of dead letter `env`."
  [env]
  (let [post (post-of (:segment env))]
    (cond-> [["herald.job" (name (:job env))] ["herald.error.class" (:error-class env)]
             ["herald.error.message" (str (:error-message env))]]
      (:task env) (conj ["herald.task" (name (:task env))])
      (:attempts env) (into [["herald.attempts" (str (:attempts env))]
                             ["herald.first-failure-at" (str (:first-failure-at env))]
                             ["herald.last-failure-at" (str (:last-failure-at env))]])
      (:id post) (conj ["herald.post-id" (str (:id post))]))))

(defn- log-line
  "One concise line for a dead letter (no stack trace)."
  [topic env]
  (str "herald.feed: job " (name (:job env)) " dead-lettered "
       (if-let [p (post-of (:segment env))] (str "post " (:id p)) "an unreadable record")
       (when (:attempts env) (str " after " (:attempts env) " attempts over "
                                  (- (long (:last-failure-at env)) (long (:first-failure-at env))) " ms"))
       " to " topic ": " (:error-class env) ": " (:error-message env)))

(defn timeout-ms
  "How long one dead-letter send may block its stream thread, the send's own wait for the topic's metadata
  included: `:send-timeout-ms` of the `:events` options `o`, at most 5 s. An attempt that takes longer throws
  and is made again under herald.flow's backoff, so the thread never blocks near max.poll.interval.ms (300 s)."
  ^long [o]
  (min 5000 (long (:send-timeout-ms o))))

(def ^:private bound-keys
  "The producer properties that bound how long a send may block or wait; the dead letters' own values win over
  the user's `:producer` settings (which are meant for the posts' producer)."
  ["max.block.ms" "delivery.timeout.ms" "request.timeout.ms"])

(defn producer-options
  "The `:events` options `o` for the dead letters' producer: `timeout-ms` as its send timeout (so max.block.ms and
  delivery.timeout.ms too), and none of the user's `:producer` bounds: `{\"max.block.ms\" 60000}` set for the posts'
  producer made a dead-letter send block its stream thread a minute while no broker answered."
  [o]
  (-> (assoc o :send-timeout-ms (timeout-ms o))
      (update :producer #(apply dissoc % bound-keys))))

(defn producer
  "The dead letters' own producer for the `:events` options `o` (see `producer-options`): a dead-letter topic that
  refuses records cannot fill or block the producer the posts are published with."
  ^KafkaProducer [o]
  (kafka/producer (producer-options o)))

(defn lazy-producer
  "The dead letters' producer, made by `(make)` on the first dead letter: `{:get fn :close! fn-of-timeout-ms}`.
  Made once whatever the threads; a `make` that throws (no bootstrap address resolves for a moment) is called
  again on the next dead letter (a delay kept its exception, and every later dead letter failed until a
  restart); once `:close!` ran, `:get` throws `:herald.feed/unavailable` instead of making one nobody closes."
  [make]
  (let [p (atom nil) closed (atom false) lock (Object.)]
    {:get (fn []
            (or (when-not @closed @p)
                (locking lock
                  (cond @closed (throw (ex-info "dead-letter producer closed (the feed is stopping)"
                                                {:type :herald.feed/unavailable :operation "dead-letter send"}))
                        @p @p
                        :else (reset! p (make))))))
     :close! (fn [ms]
               (locking lock
                 (reset! closed true)
                 (when-let [^KafkaProducer x @p] (.close x (java.time.Duration/ofMillis (long ms))))))}))

(defn- send-acked!
  "Sends `rec` with `producer` and waits for its acknowledgement, `timeout-ms` in all; else throws ex-info
  :herald.feed/unavailable naming the topic and the cause (one line: herald.flow logs it when the sends start
  failing)."
  [^KafkaProducer producer ^ProducerRecord rec ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)
        fail (fn [^Throwable e]
               (let [c (if (and (instance? ExecutionException e) (.getCause e)) (.getCause e) e)]
                 (ex-info (str "dead-letter topic " (.topic rec) " not written: " (.getName (class c)) ": " (.getMessage ^Throwable c))
                          {:type :herald.feed/unavailable :operation "dead-letter send" :topic (.topic rec)} c)))]
    (try (.get (.send producer rec) (max 1 (- deadline (System/currentTimeMillis))) TimeUnit/MILLISECONDS)
         (catch ExecutionException e (throw (fail e)))
         (catch TimeoutException e (throw (fail e)))
         (catch KafkaException e (throw (fail e))))))

(defn writer
  "The `:dead-letter!` of the jobs (a fn of the job name and herald.flow's error map) appending to `topic` with
  the producer `(producer)` returns (made on the first dead letter), and `counts` (job name -> AtomicLong, a
  ConcurrentHashMap). Every dead letter (a store write given up, an undecodable record, a task error) is sent and
  acknowledged before the fn returns, within `timeout-ms`, else it throws: herald.flow runs it on the stream thread
  and calls it again while it throws, so the job's offsets never pass a record that is in neither place. One log
  line per dead letter, once acknowledged. `:failed-at` (an AtomicLong): when the last send failed, 0 once one
  worked (see `failing?`)."
  [producer ^String topic timeout-ms]
  (let [counts (ConcurrentHashMap.) failed-at (AtomicLong.)]
    {:counts counts
     :failed-at failed-at
     :dead-letter!
     (fn [job-name err]
       (let [env (envelope job-name err (System/currentTimeMillis))
             rec (ProducerRecord. topic (name job-name) (kafka/edn-text env))]
         (doseq [[k ^String v] (headers env)] (.add (.headers rec) ^String k (.getBytes v StandardCharsets/UTF_8)))
         (try (send-acked! (producer) rec (long timeout-ms))
              (catch Exception e
                (.set failed-at (System/currentTimeMillis))
                (throw e)))
         (.set failed-at 0)
         (binding [*out* *err*] (println (log-line topic env)))
         (.incrementAndGet ^AtomicLong (.computeIfAbsent counts (name job-name)
                                                         (reify java.util.function.Function (apply [_ _] (AtomicLong.)))))))}))

(def ^:private failing-window-ms
  "How long after a failed dead-letter send the writer counts as failing when no send came since: herald.flow
  tries a failing dead letter again at least every 15 s (its backoff, at most 10 s, plus a send's 5 s), so a
  failure older than twice that belongs to a record no longer retried (its stream task moved on)."
  30000)

(defn failing?
  "True while the dead letters of `writer` cannot be written: its last send failed, less than 30 s before `now`
  (ms), and none worked since. Whatever the dead letter (an undecodable record, a task error, a store write given
  up), the record's partition waits meanwhile."
  ([writer] (failing? writer (System/currentTimeMillis)))
  ([writer ^long now]
   (let [t (.get ^AtomicLong (:failed-at writer))]
     (and (pos? t) (< (- now t) (long failing-window-ms))))))

(defn count-map
  "{job-name n} of a writer's `counts`."
  [^ConcurrentHashMap counts]
  (into (sorted-map) (map (fn [[k ^AtomicLong v]] [k (.get v)])) counts))

(defn read-record
  "The envelope of dead-letter record `r` (bytes value), with `:offset` and `:headers` {name value-string}; an
  unreadable value gives `{:unreadable \"message\"}` with them."
  [^ConsumerRecord r]
  (let [hs (into {} (for [^Header h (.headers r)] [(.key h) (String. ^bytes (.value h) StandardCharsets/UTF_8)]))
        v (try (let [x (RecordCodec/decode ^bytes (.value r))] (if (map? x) x {:unreadable "not a map"}))
               (catch Exception e {:unreadable (str e)}))]
    (assoc v :offset (.offset r) :headers hs)))
