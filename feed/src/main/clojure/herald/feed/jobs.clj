(ns herald.feed.jobs
  "The feed's background work as herald.flow jobs, each a plain value: fan-out, indexing and per-minute performance.

  The runtimes that run them sit behind the feed's roles: `herald.feed.jobs.posts/flow-fanout` is a
  `herald.feed.fanout/Fanout` over the fan-out and indexing jobs, `herald.feed.jobs.perf/flow-recorder` a
  `herald.feed.perf/Recorder` over the per-minute job. Live values (push input sizes, the store, sinks) go in through
  `herald.flow/submit-job`'s `:inject`, so these values stay printable data. See
  docs/adr/0008-feed-jobs-on-flow.md."
  (:require [clojure.string :as str]
            [herald.flow :as flow]))

(set! *warn-on-reflection* true)

(defn check-options!
  "Checks `opts` against `spec` (key -> [pred \"what it must be\"]): an unknown key or a bad value throws
  ex-info {:type :herald.feed/config :key [section k] :value v} whose message names both. Returns `opts`."
  [section spec opts]
  (doseq [[k v] opts]
    (if-let [[ok? what] (get spec k)]
      (when-not (ok? v)
        (throw (ex-info (str (pr-str section) " option " k " must be " what ", got " (pr-str v))
                        {:type :herald.feed/config :key [section k] :value v})))
      (throw (ex-info (str "unknown " (pr-str section) " option " k ", expected one of "
                           (str/join " " (sort (keys spec))))
                      {:type :herald.feed/config :key [section k] :value v}))))
  opts)

(defn pos-long? "A positive integer." [x] (and (integer? x) (pos? (long x))))
(defn nat-long? "A non-negative integer." [x] (and (integer? x) (not (neg? (long x)))))

(defn watch!
  "Starts a daemon thread that waits for the job of `handle` (from herald.flow/submit-job) to end and, when
  it failed, logs it to stderr with its error: a failed job must not go unnoticed. Returns `handle`."
  [handle]
  (doto (Thread. ^Runnable (fn []
                             (let [{:keys [status ^Throwable error]} (flow/await-job handle)]
                               (when (= :failed status)
                                 (binding [*out* *err*]
                                   (println "herald.feed: the" (name (get-in handle [:job :job/name]))
                                            "job failed:" (str error))
                                   (some-> error .printStackTrace)))))
                 (str "herald-feed-watch-" (name (get-in handle [:job :job/name]))))
    (.setDaemon true)
    (.start))
  handle)

(defn- posts-input
  "The posts input: in-process a push input (herald.flow/push!, `:queue-size` posts before pushers wait); on the
  Kafka log the posts topic (injected `:kafka/topic`), read from its beginning by a new consumer group."
  [{:keys [log queue-size batch-size batch-timeout-ms]}]
  (cond-> {:task/name :posts :task/type :input :task/plugin :herald.flow.plugin/push-input
           :push/capacity (or queue-size 10000) :push/min-wait-ms 1
           :task/batch-size batch-size :task/batch-timeout-ms batch-timeout-ms}
    (= :kafka log) (assoc :kafka/start-from :earliest)))

(defn- output
  "The output task `n` writing with `plugin`: in-process (`:log :store`) it reports each post and never throws (a
  failed post stays pending in the store); on the Kafka log (`:log :kafka`) it throws, and herald.flow retries
  the batch (`:output/retries`), so that the committed offsets never pass a post not written."
  [n in-process-plugin kafka-plugin {:keys [log threads batch-size retries backoff-ms backoff-max-ms output-flush-ms]}]
  (if (= :kafka log)
    (cond-> {:task/name n :task/type :output :task/plugin kafka-plugin :task/batch-size batch-size
             :output/retries retries :output/backoff-ms backoff-ms :output/backoff-max-ms backoff-max-ms}
      ;; how often a partly filled batch is written (herald.flow's default, 5 ms, is one store call per few posts)
      output-flush-ms (assoc :task/batch-timeout-ms output-flush-ms))
    {:task/name n :task/type :output :task/plugin in-process-plugin :task/parallelism threads}))

(defn fan-out-job
  "The fan-out job: each published post (`{:post p :recipients [ids]}`) goes to every recipient's inbound feed,
  by idempotent upserts keyed by (recipient, post). Its input is the store's log in the embedded profile (a
  push input fed by the service after the store acknowledged the post, and at start from the store's pending
  fan-out records; the output's write completes the post's fan-out record in the same atomic store write) or
  the Kafka posts topic in :scale (injected `:kafka/topic`; the output also upserts the author's outbound
  copy, herald.feed.store.feeds/deliver-all!).

  | key                 | type | meaning |
  |---------------------|------|---------|
  | `:log`              | keyword | `:store` (default: in-process, push input) or `:kafka` |
  | `:threads`          | long | threads of the fan-out task and its output (one fused stage) |
  | `:batch-size`       | long | most posts per batch |
  | `:queue-size`       | long | posts the push input holds before pushers wait (in-process) |
  | `:batch-timeout-ms` | long | longest the idle input sleeps between looks at its buffer |
  | `:retries`, `:backoff-ms`, `:backoff-max-ms` | | `:log :kafka`: the output's `:output/retries` (int or :forever) and backoff |
  | `:output-flush-ms`  | long | `:log :kafka`: how often the output writes a partly filled batch |"
  [{:keys [threads] :as o}]
  {:job/name :feed-fan-out
   :job/doc "post -> each friend's inbound feed (idempotent upserts) -> the post's fan-out record completed"
   :workflow [[:posts :fan-out] [:fan-out :inbound]]
   :catalog [(posts-input o)
             {:task/name :fan-out :task/type :function :task/fn :herald.feed.jobs.posts/fan-out
              :task/parallelism threads}
             (output :inbound :herald.feed.jobs.posts/inbound-output :herald.feed.jobs.derived/feeds-output o)]})

(defn index-job
  "The indexing job: each published post goes into the search index, a batch at a time (one
  `herald.feed.store.search/index-batch!` call per batch). In the embedded profile the store's index watermark passes the post
  once a Lucene commit holds it, and a post above the watermark is indexed again when the store opens; on the
  Kafka log the job's committed offsets are the search progress (nothing else is kept).

  | key                 | type | meaning |
  |---------------------|------|---------|
  | `:log`              | keyword | `:store` (default: in-process, push input) or `:kafka` |
  | `:index-threads`    | long | threads of the index task and its output (one fused stage) |
  | `:batch-size`       | long | most posts per batch (one index call per batch) |
  | `:queue-size`       | long | posts the push input holds before pushers wait (in-process) |
  | `:batch-timeout-ms` | long | longest the idle input sleeps between looks at its buffer |
  | `:retries`, `:backoff-ms`, `:backoff-max-ms` | | `:log :kafka`: the output's `:output/retries` (int or :forever) and backoff |
  | `:output-flush-ms`  | long | `:log :kafka`: how often the output writes a partly filled batch |"
  [{:keys [index-threads] :as o}]
  {:job/name :feed-index
   :job/doc "post -> search index"
   :workflow [[:posts :index] [:index :search]]
   :catalog [(posts-input o)
             {:task/name :index :task/type :function :task/fn :herald.feed.jobs.posts/document
              :task/parallelism index-threads}
             (output :search :herald.feed.jobs.posts/search-output :herald.feed.jobs.derived/index-output
                     (assoc o :threads index-threads))]})

(defn perf-job
  "The per-minute performance job: request records `{:entity :operation :us :status :at}` (`:at` the
  request's start, epoch millis) are grouped by entity x operation into one-minute fixed windows whose
  state is an HdrHistogram of `:us` with counts per status (`herald.feed.jobs.perf/latency`). Every
  `:publish-ms` the minutes that changed are handed to the sink (open figures); when the watermark (the
  newest record's time minus `:allowed-lateness-ms`) passes a minute's end, or the job completes, the
  minute is handed on final once (closed figures, which the sink stores).

  | key                    | type | meaning |
  |------------------------|------|---------|
  | `:publish-ms`          | long | period of the open-minute figures |
  | `:allowed-lateness-ms` | long | how long after a minute's end records that started in it are still counted |
  | `:batch-size`          | long | most records per batch |"
  [{:keys [publish-ms allowed-lateness-ms batch-size]}]
  {:job/name :feed-perf
   :job/doc "request records -> 1-minute windows per entity x operation -> count, median, p95, p99, max"
   :workflow [[:requests :per-minute] [:per-minute :minutes]]
   :catalog [{:task/name :requests :task/type :input :task/plugin :herald.flow.plugin/push-input
              ;; an empty input sleeps 100 ms (the batch timeout) at once: records wait, the figures come per :publish-ms
              :push/min-wait-ms 100 :task/batch-size batch-size :task/batch-timeout-ms 100}
             {:task/name :per-minute :task/type :reduce :task/group-by-key [:entity :operation]}
             {:task/name :minutes :task/type :output :task/plugin :herald.flow.plugin/fn-output}]
   :windows [{:window/id :minute :window/task :per-minute :window/type :fixed :window/range [1 :minute]
              :window/time-key :at :window/allowed-lateness [allowed-lateness-ms :ms]
              :window/aggregation :herald.feed.jobs.perf/latency}]
   ;; the timer comes first: at a close every dirty trigger fires in this order, and the open-minute emit
   ;; ignores every event but :timer, so the final row is the last one the sink sees for a minute
   :triggers [{:trigger/window-id :minute :trigger/id :open :trigger/on :timer :trigger/period [publish-ms :ms]
               :trigger/emit :herald.feed.jobs.perf/open-minute}
              {:trigger/window-id :minute :trigger/id :closed :trigger/on :watermark
               :trigger/emit :herald.feed.jobs.perf/closed-minute}]})
