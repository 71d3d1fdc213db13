(ns herald.feed.jobs.derived
  "The fan-out and indexing jobs on the Kafka log: their store-writing outputs (idempotent, throwing so that herald.flow retries them) and their submission on the :kafka-streams runtime, one consumer group per job."
  (:require [herald.feed.events.kafka :as kafka]
            [herald.feed.events.receipts :as receipts]
            [herald.feed.jobs :as jobs]
            [herald.feed.store.search :as search]
            [herald.feed.store.feeds :as feeds]
            [herald.flow :as flow]
            [herald.flow.spi :as spi]))

(set! *warn-on-reflection* true)

;; A segment is a post record of the posts topic: {:post <post with :id and :ts> :recipients [ids]}.

(defn- store-option [task k]
  (spi/option task k some? "a herald.feed.store store"))

(defn- in-runs
  "Segments in order, cut into runs of posts and runs of change records (`{:edit p}` / `{:delete p}`, issue 11):
  each run is written in one call, the runs in log order."
  [segments]
  (partition-by #(some? (:post %)) segments))

(defn- deliveries
  "The deliveries of a run of post records, without their author copies (`:author-copied?`: written by the request
  path, or owed to the next flush)."
  [run]
  (mapv (fn [{:keys [post recipients]}] {:post post :recipients recipients :author-copied? true}) run))

(defn feeds-output
  "The fan-out job's output on the Kafka log: one `feeds/deliver-all!` per batch (every recipient's inbound copy
  of each post, idempotent upserts), and the author's outbound copy of each post whose receipt
  (herald.feed.events.receipts: the request path wrote it) has not come by the next `-flush!`, that is before the
  job's offsets pass the post: then one `deliver-all!` writes those copies. A failed write throws: herald.flow
  retries the batch (`:output/retries`) or the flush, and the job's offsets do not pass it.

  | key | type | meaning |
  |---|---|---|
  | `:feeds/store` | store | the feed's store (with the feeds/LoggedFeeds role) |"
  [task]
  (let [s (store-option task :feeds/store)
        ;; post id -> post: author copies to write at the next flush unless a receipt comes first (one stream
        ;; thread's batch: herald.flow calls -write! and -flush! under its lock)
        owed (java.util.LinkedHashMap.)]
    (reify spi/Output
      (-write! [_ segments]
        (doseq [run (in-runs segments)]
          (if (:post (first run))
            (do (feeds/deliver-all! s (deliveries run))
                (doseq [{:keys [post]} run] (.put owed (:id post) post)))
            (feeds/apply-changes! s (mapv #(select-keys % [:edit :delete]) run))))
        (doseq [id (receipts/written segments)] (.remove owed id)))
      (-flush! [_]
        (when-not (.isEmpty owed)
          (feeds/deliver-all! s (mapv (fn [p] {:post p :recipients []}) (.values owed)))
          (.clear owed)))
      (-close-output! [_]))))

(defn index-output
  "The indexing job's output on the Kafka log: one `search/index-batch!` per batch (idempotent by post id). A failed
  batch (the search server down, a failed bulk item) throws: herald.flow retries it (`:output/retries`), so an
  outage of search delays indexing and never loses a post.

  | key | type | meaning |
  |---|---|---|
  | `:search/store` | store | the feed's store |"
  [task]
  (let [s (store-option task :search/store)]
    (reify spi/Output
      (-write! [_ segments]
        (doseq [run (in-runs segments)]
          (if (:post (first run))
            (search/index-batch! s (mapv :post run))
            (doseq [{:keys [edit delete]} run]
              (if edit (search/reindex! s edit) (search/unindex! s (:id delete)))))))
      (-flush! [_])
      (-close-output! [_]))))

(defn- rejected-type?
  "True for the ex-data `d` of a store call the server refused for what was sent (a bad value or statement), which
  no retry can change; false for anything that may be an outage (timeouts, unreachable or overloaded servers,
  a closed store, an error of unknown kind)."
  [d]
  (let [bad-status? #(and (int? %) (<= 400 (long %) 499) (not (#{408 409 429} %)))]
    (case (:type d)
      (:herald.feed.store.cassandra/invalid-query :herald.feed.store/invalid) true
      :herald.feed.store.opensearch/http-error (bad-status? (:status d))
      :herald.feed.store.opensearch/bulk-failed (boolean (and (seq (:failed d)) (every? (comp bad-status? :status) (:failed d))))
      false)))

(defn rejected?
  "The outputs' `:output/rejected?`: true when `e` (or an exception it wraps) is a store's refusal of the records
  themselves (`rejected-type?`), as a Cassandra write rejected for a bad value: herald.flow then retries the batch
  `:rejected-retries` times, splits it and sends the records refused to the dead-letter topic; an outage is
  retried until the server is back (`:retries`, `:forever` by default)."
  [^Throwable e]
  (boolean (some #(rejected-type? (ex-data %)) (take-while some? (iterate ex-cause e)))))

(defn- streams-config
  "The Kafka Streams properties of both jobs: the consumers' fetches wait for `:fetch-min-bytes` or
  `:fetch-max-wait-ms` (a fetch of one or two records per partition cost the broker and the instance a request
  each), then the membership timeouts and `herald.feed.events.kafka/idle-consumer-config`, then `:streams` over them."
  [o]
  (merge {"fetch.min.bytes" (:fetch-min-bytes o) "fetch.max.wait.ms" (:fetch-max-wait-ms o)
          "session.timeout.ms" 10000 "heartbeat.interval.ms" 2000}
         kafka/idle-consumer-config
         (:streams o)))

(defn- submit!
  "Submits `job` on :kafka-streams under application id `app-id`, reading `topic`, with `inject` for its output
  (plus `rejected?`, `:rejected-retries` and `:dead-letter-after-ms` as `:output/give-up-after-ms`); a record the
  job cannot apply (undecodable, refused by the store for good, or still failing `:dead-letter-after-ms` after its
  first failure) goes to `(:dead-letter! o)` with the job's name."
  [job app-id topic inject o]
  (let [inject (update-vals inject #(cond-> (assoc % :output/rejected? ::rejected? :output/rejected-retries (:rejected-retries o))
                                      ;; any failure, an outage too, dead-lettered once it has lasted this long
                                      (:dead-letter-after-ms o) (assoc :output/give-up-after-ms (:dead-letter-after-ms o))))]
   (jobs/watch!
   (flow/submit-job job
                    {:runtime :kafka-streams
                     :on-error (fn [e] ((:dead-letter! o) (:job/name job) e))
                     :data-dir (:data-dir o)
                     :checkpoint-interval-ms (:commit-interval-ms o)
                     :inject (assoc inject :posts {:kafka/topic topic})
                     :kafka {:bootstrap-servers (:bootstrap-servers o) :application-id app-id
                             :processing-guarantee :at-least-once :threads (:threads o) :start-from :earliest
                             :replication-factor (:replication-factor o)
                             :config (streams-config o)}}))))

(defn group-ids
  "The application ids (consumer groups) of the fan-out and indexing jobs for options `o`."
  [o]
  [(str (:topic-prefix o) "fan-out") (str (:topic-prefix o) "index")])

(defn submit-jobs!
  "Starts the fan-out and indexing jobs of `store` on the Kafka posts `topic` (options of
  herald.feed.events.kafka/check, with `:dead-letter!`, a fn of the job name and herald.flow's error map
  `{:task :segment :exception}`, for the records a job cannot apply): application ids `<:topic-prefix>fan-out` and `<:topic-prefix>index`, so every
  instance joins the same two consumer groups and Kafka spreads the partitions over them. Returns
  {:fan-out handle :index handle}."
  [store topic o]
  ;; the outputs write every :fan-out-flush-ms / :index-flush-ms (the visibility lag); the offsets commit every
  ;; :commit-interval-ms (each commit also writes what is pending first), so a commit is not paid per small batch
  (let [jo (assoc o :log :kafka :index-threads (:threads o) :batch-timeout-ms 50)
        [fg ig] (group-ids o)
        fj (submit! (jobs/fan-out-job (assoc jo :output-flush-ms (:fan-out-flush-ms o))) fg topic
                    {:inbound {:feeds/store store}} o)
        ;; the stream tasks (partitions) of a thread share one batch (herald.flow.kafka.output): one bulk per
        ;; :index-flush-ms per thread; search visibility waits for the server's refresh (1 s) anyway
        flush-ms (:index-flush-ms o)]
    (try {:fan-out fj
          :index (submit! (jobs/index-job (assoc jo :output-flush-ms flush-ms)) ig topic {:search {:search/store store}}
                          (update o :commit-interval-ms max flush-ms))}
         (catch Throwable t (flow/kill-job fj) (throw t)))))
