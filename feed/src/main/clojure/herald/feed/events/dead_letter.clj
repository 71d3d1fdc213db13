(ns herald.feed.events.dead-letter
  "The dead-letter topic of the Kafka log (`<prefix>posts-dead-letter`): what the fan-out and indexing jobs could not apply, as an EDN envelope with its cause in headers, counted per job; read back by the re-drive (herald.feed.events.redrive)."
  (:require [herald.feed.events.kafka :as kafka])
  (:import (herald.flow.log RecordCodec)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent ConcurrentHashMap TimeUnit)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.kafka.clients.consumer ConsumerRecord)
           (org.apache.kafka.clients.producer KafkaProducer ProducerRecord)
           (org.apache.kafka.common.header Header)))

(set! *warn-on-reflection* true)

;; A dead letter is one record of the dead-letter topic (one partition), keyed by the job's name (`feed-fan-out`,
;; `feed-index`). Its value is EDN text, the envelope:
;;   {:job :feed-fan-out :task :inbound :error "the exception as text" :error-class "..." :error-message "..." :at ms
;;    :segment <the record of the posts topic, as the job read it>        ; absent for an undecodable record
;;    :bytes "<base64 of the record>"                                      ; only for an undecodable record
;;    :attempts n :first-failure-at ms :last-failure-at ms}               ; only for a store write given up
;; and its headers repeat the cause for tools that do not read EDN (all UTF-8 text): herald.job, herald.task,
;; herald.error.class, herald.error.message, herald.attempts, herald.first-failure-at, herald.last-failure-at,
;; herald.post-id (those that apply).

(defn post-of
  "The post a posts-topic record (a dead letter's `:segment`) is about: its post, edit or delete; or nil."
  [segment]
  (when (map? segment) (some segment [:post :edit :delete])))

(defn envelope
  "The dead letter of herald.flow's error map `{:task :segment :exception ...}` of job `job-name`, at `now`."
  [job-name {:keys [task segment ^Throwable exception] :as err} now]
  (let [raw (:bytes (ex-data exception))]
    (cond-> {:job job-name :task task :error (str exception) :error-class (.getName (class exception))
             :error-message (str (ex-message exception)) :at now}
      (some? segment) (assoc :segment segment)
      raw (assoc :bytes (.encodeToString (java.util.Base64/getEncoder) ^bytes raw))
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

(defn writer
  "The `:dead-letter!` of the jobs (a fn of the job name and herald.flow's error map) appending to `topic` with
  `producer`, and `counts` (job name -> AtomicLong, a ConcurrentHashMap). A record handed on by an output (it has
  `:attempts`: a store write given up) is sent and acknowledged before the fn returns, within `timeout-ms`, else
  it throws, so that the output keeps it (its offsets never pass a record that is in neither place); the others
  (undecodable records, task errors) are sent without waiting. One log line each."
  [^KafkaProducer producer ^String topic timeout-ms]
  (let [counts (ConcurrentHashMap.)]
    {:counts counts
     :dead-letter!
     (fn [job-name err]
       (let [env (envelope job-name err (System/currentTimeMillis))
             rec (ProducerRecord. topic (name job-name) (kafka/edn-text env))]
         (doseq [[k ^String v] (headers env)] (.add (.headers rec) ^String k (.getBytes v StandardCharsets/UTF_8)))
         (binding [*out* *err*] (println (log-line topic env)))
         (if (:attempts env)
           (.get (.send producer rec) (long timeout-ms) TimeUnit/MILLISECONDS)
           (try (.send producer rec)
                (catch Exception e (binding [*out* *err*] (println "herald.feed: writing to" topic "failed:" (str e))))))
         (.incrementAndGet ^AtomicLong (.computeIfAbsent counts (name job-name)
                                                         (reify java.util.function.Function (apply [_ _] (AtomicLong.)))))))}))

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
