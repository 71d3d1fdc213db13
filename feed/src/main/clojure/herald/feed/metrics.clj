(ns herald.feed.metrics
  "The Prometheus text exposition (format 0.0.4) of the feed's request figures, background work, store and JVM gauges."
  (:require [clojure.string :as str]
            [herald.feed.perf :as perf]
            [herald.feed.store :as store])
  (:import (java.lang.management ManagementFactory)
           (org.HdrHistogram AbstractHistogram)))

(set! *warn-on-reflection* true)

(def buckets-seconds
  "Upper bounds of the request duration histogram buckets, in seconds."
  [0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1.0 2.5 5.0 10.0])

(defn- bound-label
  "A bucket bound as the conventional plain decimal: 0.0005 (not 5.0E-4), 1.0, 10.0."
  [le]
  (let [s (.toPlainString (.stripTrailingZeros (BigDecimal/valueOf (double le))))]
    (if (str/includes? s ".") s (str s ".0"))))

(defn- escape [s]
  (-> (str s) (str/replace "\\" "\\\\") (str/replace "\"" "\\\"") (str/replace "\n" "\\n")))

(defn- labels [m]
  (if (empty? m)
    ""
    (str "{" (str/join "," (map (fn [[k v]] (str (name k) "=\"" (escape v) "\"")) m)) "}")))

(defn- number-text [x]
  (cond (integer? x) (str x)
        (float? x) (let [d (double x)]
                     (cond (Double/isNaN d) "NaN"
                           (Double/isInfinite d) (if (pos? d) "+Inf" "-Inf")
                           :else (str d)))
        :else (str x)))

(defn- family [^StringBuilder sb metric type help samples]
  (when (seq samples)
    (.append sb (str "# HELP " metric " " help "\n# TYPE " metric " " type "\n"))
    (doseq [[suffix lbls v] samples]
      (.append sb (str metric suffix (labels lbls) " " (number-text v) "\n")))))

(defn- duration-samples [totals]
  (for [[[entity op] {:keys [^AbstractHistogram histogram count]}] totals
        :let [base {:entity (name entity) :operation (name op)}]
        sample (concat
                (for [le buckets-seconds]
                  ["_bucket" (assoc base :le (bound-label le))
                   (.getCountBetweenValues histogram 0 (long (* 1e6 (double le))))])
                [["_bucket" (assoc base :le "+Inf") count]
                 ["_sum" base (/ (* (.getMean histogram) (double count)) 1e6)]
                 ["_count" base count]])]
    sample))

(defn- store-samples
  "[metric type help value] of the store's stats: the keys in store/counter-stats are counters
  (named ..._total), the others gauges; HELP from store/stat-help."
  [stats]
  (for [[k v] (sort-by key stats) :when (number? v)
        :let [counter? (contains? store/counter-stats k)
              base (str "herald_feed_store_" (str/replace (name k) #"[^a-zA-Z0-9_]" "_"))]]
    [(if (and counter? (not (str/ends-with? base "_total"))) (str base "_total") base)
     (if counter? "counter" "gauge")
     (get store/stat-help k "Store value.")
     v]))

(defn- jvm-samples []
  (let [mem (ManagementFactory/getMemoryMXBean)
        heap (.getHeapMemoryUsage mem)]
    [["herald_jvm_heap_used_bytes" "gauge" "JVM heap in use." (.getUsed heap)]
     ["herald_jvm_heap_max_bytes" "gauge" "JVM maximum heap." (.getMax heap)]
     ["herald_jvm_threads" "gauge" "Live JVM threads." (.getThreadCount (ManagementFactory/getThreadMXBean))]
     ["herald_process_uptime_seconds" "gauge" "Seconds since the JVM started."
      (/ (.getUptime (ManagementFactory/getRuntimeMXBean)) 1000.0)]]))

(def ^:private fanout-families
  [[:submitted "counter" "Posts handed to the background work (fan-out and indexing), including resumed ones."]
   [:completed "counter" "Posts whose fan-out to the friends' inbound feeds completed."]
   [:failed "counter" "Posts whose fan-out failed after retries (left pending in the store for the next start)."]
   [:indexed "counter" "Posts put into the search index by the indexing job."]
   [:index-failed "counter" "Posts whose indexing failed after retries (the store indexes every post above its last index commit watermark on the next open)."]
   [:pending "gauge" "Posts whose fan-out or indexing has not run yet (queued or running)."]
   [:queued "gauge" "Posts waiting in the fan-out's queue."]
   [:index-queued "gauge" "Posts waiting in the indexing job's queue."]
   [:fan-out-lag "gauge" "Posts not yet through the fan-out job: in-process, queued in its input; on Kafka, records behind the end of the posts topic's partitions this instance holds."]
   [:index-lag "gauge" "Posts not yet through the indexing job: in-process, queued in its input; on Kafka, records behind the end of the posts topic's partitions this instance holds."]
   [:dead-letters "counter" "On Kafka: records of the posts topic a job could not apply (undecodable, not a post record, refused by a store for good after :rejected-retries, or still failing :dead-letter-after-ms after the first failure), written to <prefix>posts-dead-letter (by this instance's jobs; per job: herald_feed_dead_letters_total)."]
   [:dead-letter-failing "gauge" "On Kafka: 1 while a job of this instance cannot write a dead letter (of an undecodable record, a task error, or a store write given up; the dead-letter topic refuses it or cannot be reached): the record's partition waits and the send is tried again; else 0."]
   [:fan-out-cluster-lag "gauge" "On Kafka: posts of the whole cluster not yet committed by the fan-out job's consumer group (every instance; the same on every instance, never to be summed)."]
   [:index-cluster-lag "gauge" "On Kafka: posts of the whole cluster not yet committed by the indexing job's consumer group (every instance; the same on every instance, never to be summed)."]])

(def ^:private perf-families
  [[:recorded "counter" "Request records taken by the performance recorder."]
   [:dropped "counter" "Request records dropped: the per-minute job (or the Kafka sender) too far behind (its queue full), or Kafka unreachable."]
   [:late "counter" "Request records (on Kafka: batches, on the instance running the window) that came after their minute was final (more than the allowed lateness before the newest record)."]
   [:queued "gauge" "Request records waiting for the per-minute job (or the Kafka sender)."]
   [:store-errors "counter" "Failed writes of closed minutes to the data directory."]
   [:send-errors "counter" "Batches of request records that could not be written to Kafka (their requests are counted in dropped)."]
   [:unreadable "counter" "Records of the Kafka minutes topic that are not minute rows (skipped)."]])

(def ^:private http-families
  "[server-stats key, metric, type, help, scale]"
  [[:connections "herald_http_connections" "gauge" "Open HTTP connections." 1]
   [:pending "herald_http_pending" "gauge" "Handler invocations waiting for or running on a thread (bounded by :max-pending)." 1]
   [:queue-depth "herald_http_queue_depth" "gauge" "Requests waiting for a handler thread right now." 1]
   [:handlers-started "herald_http_handlers_started_total" "counter" "Handlers started off the event loop." 1]
   [:queue-wait-ms-total "herald_http_queue_wait_seconds_total" "counter" "Time requests waited for their handler thread, summed." 0.001]
   [:queue-wait-ms-max "herald_http_queue_wait_max_seconds" "gauge" "Longest wait of a request for its handler thread since the start." 0.001]
   [:rejected "herald_http_rejected_total" "counter" "Requests answered 503 by the HTTP server because :max-pending handlers were pending." 1]])

(defn prometheus-text
  "The metrics page: request counts by entity, operation and status, request duration histograms (both
  from the recorder's figures: with `:events {:type :kafka}` the cluster's, the same on every instance, so
  never to be summed over instances), background work counters (`fanout-stats`, a map as herald.feed.fanout/stats), the recorder's own
  counters (herald.feed.perf/recorder-stats), store counters and gauges
  (`store-stats`, a flat map of numbers as herald.feed.store/stats), the HTTP server's figures
  (`http-stats`, herald.http/server-stats, or nil) and JVM gauges."
  ([recorder fanout-stats store-stats] (prometheus-text recorder fanout-stats store-stats nil))
  ([recorder fanout-stats store-stats http-stats]
  (let [sb (StringBuilder.)]
    (family sb "herald_feed_requests_total" "counter" "Requests served by entity, operation and HTTP status (with Kafka events: by the whole cluster)."
            (for [[[entity op status] n] (sort-by (comp #(mapv str %) key) (perf/status-counts recorder))]
              ["" {:entity (name entity) :operation (name op) :status status} n]))
    (family sb "herald_feed_request_duration_seconds" "histogram" "Request durations by entity and operation (with Kafka events: of the whole cluster)."
            (duration-samples (perf/totals recorder)))
    (doseq [[k type help] fanout-families :when (contains? fanout-stats k)]
      (family sb (str "herald_feed_fanout_" (str/replace (name k) "-" "_") (when (= type "counter") "_total")) type help
              [["" {} (get fanout-stats k)]]))
    ;; issue 10: the dead letters per job (the total above stays for dashboards that read it)
    (family sb "herald_feed_dead_letters_total" "counter"
            "On Kafka: records of the posts topic this instance's jobs sent to <prefix>posts-dead-letter, by job (undecodable, refused by a store for good, or still failing :events :dead-letter-after-ms after their first failure)."
            (for [[job n] (:dead-letters-by-job fanout-stats)] ["" {:job job} n]))
    (let [rs (perf/recorder-stats recorder)]
      (doseq [[k type help] perf-families :when (contains? rs k)]
        (family sb (str "herald_feed_perf_" (str/replace (name k) "-" "_") (when (= type "counter") "_total")) type help
                [["" {} (get rs k)]])))
    (doseq [[metric type help v] (store-samples store-stats)]
      (family sb metric type help [["" {} v]]))
    (doseq [[k metric type help scale] http-families :let [v (get http-stats k)] :when (number? v)]
      (family sb metric type help [["" {} (if (== 1 (double scale)) v (* (double v) (double scale)))]]))
    (doseq [[metric type help v] (jvm-samples)]
      (family sb metric type help [["" {} v]]))
    (str sb))))
