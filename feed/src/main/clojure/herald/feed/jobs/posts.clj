(ns herald.feed.jobs.posts
  "The fan-out and indexing jobs' parts (their task fns, the outputs that complete a post's durable record in the store) and `flow-fanout`, a `herald.feed.fanout/Fanout` that runs both jobs."
  (:require [herald.feed.fanout :as fanout]
            [herald.feed.jobs :as jobs]
            [herald.feed.outage :as outage]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.search :as search]
            [herald.flow :as flow]
            [herald.flow.spi :as spi])
  (:import (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

;; A segment is a fan-out job as the service submits it: {:post <stored post> :recipients [ids]}.

;; ---------------------------------------------------------------------------------------------------
;; task fns: pure

(defn- post? [p] (and (map? p) (some? (:id p)) (some? (:from p))))

(defn- check-record!
  "`seg` when it is a post record (`{:post p :recipients [ids]}`) or a change record (`{:edit p}`, `{:delete
  p}`); else throws ex-info :herald.feed/bad-record: the job reports it (on Kafka: the dead-letter topic) instead
  of handing a store write it can never apply."
  [{:keys [post recipients edit delete] :as seg}]
  (if (or (and (post? post) (or (nil? recipients) (sequential? recipients)))
          (and (nil? post) (post? (or edit delete))))
    seg
    (throw (ex-info (str "not a post record nor a change record: " (pr-str (if (map? seg) (keys seg) (type seg))))
                    {:type :herald.feed/bad-record}))))

(defn- receipts
  "The record's `:author-copies` (herald.feed.events.receipts) when it is a vector of ids, else nil (a malformed
  one says nothing: the job then writes those copies itself)."
  [{ids :author-copies}]
  (when (and (vector? ids) (every? int? ids)) ids))

(defn fan-out
  "The fan-out task: the deliveries of a post, its recipients without repeats and without the sender. A change
  record of the Kafka log (`{:edit post}`, `{:delete post}`, issue 11) passes as it is; anything else throws
  (:herald.feed/bad-record). A record's receipts of author copies (`:author-copies`, the Kafka log) pass on."
  [seg]
  (let [{:keys [post recipients]} (check-record! seg)
        ids (receipts seg)]
    (cond-> (if post
              {:post post :recipients (into [] (comp (remove #{(:from post)}) (distinct)) recipients)}
              (select-keys seg [:edit :delete]))
      ids (assoc :author-copies ids))))

(defn document
  "The index task: what the search index needs of a post (the stored post itself); a change record (`{:edit
  post}`, `{:delete post}`) passes as it is; anything else throws (:herald.feed/bad-record)."
  [seg]
  (let [{:keys [post]} (check-record! seg)]
    (if post {:post post} (select-keys seg [:edit :delete]))))

;; ---------------------------------------------------------------------------------------------------
;; outputs: each segment's store write, retried, then reported to :*/done as true or false

(defn- attempt!
  "Runs (f); on a throw retries `retries` times (10 ms, 100 ms, 1 s ... apart), then calls
  (on-error throwable) and returns false."
  [f retries on-error]
  (loop [n 0]
    (let [r (try (f) ::ok (catch Throwable t t))]
      (cond (= ::ok r) true
            (< n (long retries)) (do (Thread/sleep (long (* 10 (Math/pow 10 (min n 3))))) (recur (inc n)))
            :else (do (on-error r) false)))))

(defn- output-options [task prefix]
  (let [k #(keyword prefix %)]
    {:store (spi/option task (k "store") some? "a herald.feed.store store")
     :retries (spi/option task (k "retries") #(and (integer? %) (not (neg? (long %)))) "a non-negative integer")
     :done (spi/option task (k "done") fn? "a fn of (ok? segment)")
     :on-error (spi/option task (k "on-error") fn? "a fn of (throwable segment)")}))

(defn inbound-output
  "The fan-out job's output: `feeds/fan-out!` per post (every recipient's inbound upsert and the completion
  of the post's fan-out record, one atomic write in the embedded store), or, when the store has the
  `herald.feed.store.feeds/BatchFanOut` capability, one `-fan-out-all!` per batch (one atomic write for the
  batch; should it throw, post by post with retries). Idempotent, so a replay is harmless.

  | key | type | meaning |
  |---|---|---|
  | `:inbound/store` | store | the feed's store |
  | `:inbound/retries` | long | retries of a failing write before `:inbound/on-error` (the record then stays pending in the store) |
  | `:inbound/done` | fn | `(f ok? segment)` after each post |
  | `:inbound/on-error` | fn | `(f throwable segment)` after the last retry failed |"
  [task]
  (let [{:keys [store retries done on-error]} (output-options task "inbound")
        batch? (feeds/batch-fan-out? store)
        one-by-one (fn [segments]
                     (doseq [{:keys [post recipients] :as seg} segments]
                       (done (attempt! #(when (seq recipients) (feeds/fan-out! store post recipients))
                                       retries #(on-error % seg))
                             seg)))]
    (reify spi/Output
      (-write! [_ segments]
        (let [work (filterv #(seq (:recipients %)) segments)]
          (if (and batch? (next work))
            ;; the whole batch in one store write; should it throw, post by post with retries (idempotent)
            (if (try (feeds/fan-out-all! store work) true (catch Throwable _ false))
              (doseq [seg segments] (done true seg))
              (one-by-one segments))
            (one-by-one segments))))
      (-flush! [_])
      (-close-output! [_]))))

(defn search-output
  "The indexing job's output: puts each batch into the search index in one call (`search/index-batch!`,
  idempotent by post id; it never throws for a post whose indexing fails: the store retries it and its index
  watermark brings it back on the next open). Should the batch call throw (a malformed post, a closed store),
  each post is indexed on its own (`search/index!`, retried), so one bad post does not hold back the others.

  | key | type | meaning |
  |---|---|---|
  | `:search/store` | store | the feed's store |
  | `:search/retries` | long | retries of a failing index call for one post |
  | `:search/done` | fn | `(f ok? segment)` after each post |
  | `:search/on-error` | fn | `(f throwable segment)` after the last retry failed |"
  [task]
  (let [{:keys [store retries done on-error]} (output-options task "search")]
    (reify spi/Output
      (-write! [_ segments]
        (if (try (search/index-batch! store (mapv :post segments)) true (catch Throwable _ false))
          (doseq [seg segments] (done true seg))
          (doseq [{:keys [post] :as seg} segments]
            (done (attempt! #(search/index! store post) retries #(on-error % seg)) seg))))
      (-flush! [_])
      (-close-output! [_]))))

;; ---------------------------------------------------------------------------------------------------
;; the Fanout

(def ^:private option-spec
  {:threads [jobs/pos-long? "a positive integer"]
   :index-threads [jobs/pos-long? "a positive integer"]
   :queue-size [jobs/pos-long? "a positive integer"]
   :batch-size [jobs/pos-long? "a positive integer"]
   :batch-timeout-ms [jobs/nat-long? "a non-negative integer (milliseconds)"]
   :retries [jobs/nat-long? "a non-negative integer"]
   :on-error [fn? "a fn of (throwable job)"]})

(def defaults
  "The default options of `flow-fanout`."
  {:threads 2 :index-threads 1 :queue-size 10000 :batch-size 256 :batch-timeout-ms 50 :retries 3})

(def ^:private background-outage
  "One reporter for the background writes: an outage of the store they write is a line per state change, not a
  line per failed post."
  (outage/reporter "background work (fan-out, indexing)" {:quiet-back-ms 10000}))

(defn- default-on-error [^Throwable t job]
  (when-not (outage/reported? t)
    (outage/failed! background-outage (ex-info (str "post " (get-in job [:post :id]) ": " (ex-message t)) {} t))))

(defn- push!
  "Pushes `job` into the push input of the flow job `handle`, waiting while its buffer is full (backpressure)
  as long as the job runs; throws :herald.feed/unavailable once it is closed or ended."
  [handle job]
  (try (flow/push! handle :posts job)
       (catch clojure.lang.ExceptionInfo e
         (throw (ex-info (str "the " (name (get-in handle [:job :job/name])) " job is not running")
                         {:type :herald.feed/unavailable} e)))))

(defn- finish!
  "Ends the push input of job `h` and waits for the job to complete by `deadline` (epoch millis); kills it when
  it does not. True when it completed."
  [h ^long deadline]
  (try (flow/close-input! h :posts) (catch clojure.lang.ExceptionInfo _ nil))
  (let [st (flow/await-job h (max 1 (- deadline (System/currentTimeMillis))))]
    (or (= :completed (:status st))
        (do (flow/kill-job h) false))))

(defn- counters [] {:submitted (AtomicLong.) :fanned-out (AtomicLong.) :fan-out-failed (AtomicLong.)
                    :indexed (AtomicLong.) :index-failed (AtomicLong.)})

(defn- pending ^long [{:keys [^AtomicLong submitted ^AtomicLong fanned-out ^AtomicLong fan-out-failed
                              ^AtomicLong indexed ^AtomicLong index-failed]}]
  (let [n (.get submitted)]
    (max (- n (.get fanned-out) (.get fan-out-failed)) (- n (.get indexed) (.get index-failed)))))

(defn- caught-up?
  "True once both jobs have gone through every post pushed before the call (herald.flow/await-caught-up),
  within `timeout-ms`."
  [handles ^long timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (every? #(flow/await-caught-up % (max 1 (- deadline (System/currentTimeMillis)))) handles)))

(defn- submit-jobs!
  "Submits the fan-out and indexing jobs; returns [fan-out-handle index-handle]."
  [store o c]
  (let [done (fn [ok-key fail-key]
               (fn [ok? _] (.incrementAndGet ^AtomicLong (c (if ok? ok-key fail-key)))))
        on-error (fn [t seg] ((:on-error o) t seg))
        task-error (fn [k] (fn [{:keys [exception segment]}] (on-error exception segment) ((done nil k) false segment)))
        fj (jobs/watch!
            (flow/submit-job (jobs/fan-out-job o)
                            {:inject {:inbound {:inbound/store store :inbound/retries (:retries o)
                                                :inbound/done (done :fanned-out :fan-out-failed) :inbound/on-error on-error}}
                             :on-error (task-error :fan-out-failed)}))]
    (try [fj (jobs/watch!
              (flow/submit-job (jobs/index-job o)
                              {:inject {:search {:search/store store :search/retries (:retries o)
                                                 :search/done (done :indexed :index-failed) :search/on-error on-error}}
                               :on-error (task-error :index-failed)}))]
         (catch Throwable t (flow/kill-job fj) (throw t)))))

(defn flow-fanout
  "A `herald.feed.fanout/Fanout` that runs the fan-out and indexing jobs (`herald.feed.jobs/fan-out-job`,
  `index-job`) on herald.flow's in-process runtime. `publish!` stores the post with its pending fan-out record,
  then pushes it into each job's push input (herald.flow/push!: lock-free, it wakes nobody; it waits while the
  buffer is full: backpressure); the outputs complete the post's durable record in the store. `await-idle` is
  herald.flow/await-caught-up on both jobs. `close!` ends both inputs and lets the jobs drain; what does not
  finish stays pending in the store and resumes on the next start.

  | key                 | type | default | meaning |
  |---------------------|------|---------|---------|
  | `:threads`          | long | 2       | fan-out threads |
  | `:index-threads`    | long | 1       | indexing threads (the embedded store indexes one batch at a time) |
  | `:queue-size`       | long | 10000   | posts each job's push input holds before posting requests wait |
  | `:batch-size`       | long | 256     | most posts per batch |
  | `:batch-timeout-ms` | long | 50      | longest an idle input sleeps between looks at its buffer (1 ms after a busy look, doubling while idle): the most a post waits for the jobs after an idle spell |
  | `:retries`          | long | 3       | retries of a failing store write (10 ms, 100 ms, 1 s apart) |
  | `:on-error`         | fn   | prints  | `(fn [throwable job])` after the last retry failed |"
  [store opts]
  (jobs/check-options! :fanout option-spec opts)
  (let [o (merge defaults {:on-error default-on-error} opts)
        c (counters)
        closed (volatile! false)
        [fj ij] (submit-jobs! store o c)
        queued #(long (:queued (flow/push-stats % :posts)))]
    (reify
      fanout/KeyedFanout
      ;; the post, its pending fan-out and its key record in one atomic write (keys/publish-keyed!); a repeat finds
      ;; the record and submits nothing (the first call submitted the fan-out, or a restart resumes it: pending)
      (-publish-keyed! [this post recipients k]
        (when-not (keys/keyed-publish? store) (throw (fanout/keys-unsupported)))
        (let [rs (vec (distinct recipients))
              rec (keys/publish-keyed! store post rs k)]
          (when (:created? rec) (fanout/-submit! this {:post (:post rec) :recipients rs}))
          rec))

      fanout/Fanout
      (-publish! [this post recipients]
        (let [rs (vec (distinct recipients))
              stored (feeds/publish! store post rs)]
          (fanout/-submit! this {:post stored :recipients rs})
          stored))
      (-submit! [_ job]
        (when @closed (throw (ex-info "fan-out is closed" {:type :herald.feed/unavailable})))
        (.incrementAndGet ^AtomicLong (:submitted c))
        (push! fj job)
        (push! ij job))
      (-await-idle [_ timeout-ms] (caught-up? [fj ij] timeout-ms))
      (-stats [_]
        {:submitted (.get ^AtomicLong (:submitted c)) :completed (.get ^AtomicLong (:fanned-out c))
         :failed (.get ^AtomicLong (:fan-out-failed c)) :indexed (.get ^AtomicLong (:indexed c))
         :index-failed (.get ^AtomicLong (:index-failed c)) :pending (pending c)
         :queued (queued fj) :index-queued (queued ij) :fan-out-lag (queued fj) :index-lag (queued ij)})
      (-close! [_ timeout-ms]
        (vreset! closed true)
        (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))
              ;; both jobs drain at once; each gets what is left of the deadline
              a (future (finish! fj deadline))
              b (finish! ij deadline)]
          (and @a b))))))
