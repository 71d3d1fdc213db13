(ns herald.feed.fanout
  "The `Fanout` role (each durably recorded post's background work: inbound copies, indexing, off the request path) and its fallback implementation, a thread pool; the default runs it as herald.flow jobs (herald.feed.jobs.posts/flow-fanout)."
  (:import (java.util.concurrent ArrayBlockingQueue RejectedExecutionHandler ThreadFactory
                                 ThreadPoolExecutor TimeUnit)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defprotocol Fanout
  "Runs the background work of published posts ({:post post :recipients [ids]}: deliver to every
  recipient's inbound feed, index) asynchronously, at least once while the process lives: a store write
  that throws is retried with backoff, and a post whose fan-out still fails stays pending in the store (its
  durable record), to be resumed on the next start. The work is idempotent, so a repeat is harmless. Posts
  may be processed in any order and concurrently."
  (-submit! [f job] "Hands `job` on; when the queue is full the caller waits or runs it itself (backpressure).")
  (-await-idle [f timeout-ms] "Blocks until no job is queued or running; true if idle in time.")
  (-stats [f] "{:submitted n :completed n :failed n :pending n :queued n}, and more where the implementation has them (:indexed, :index-failed, :index-queued).")
  (-close! [f timeout-ms] "Stops taking jobs, drains queued ones up to `timeout-ms`; idempotent."))

(defprotocol BatchFanOut
  "An optional capability of a store (besides `herald.feed.store/InboundStore`): the fan-out of many posts
  in one durable write. A store that has it lets the fan-out job write each batch at once (the embedded
  store: one RocksDB WriteBatch, one WAL append, instead of one per post). Same guarantees as `-fan-out!`
  on each post: idempotent, every recipient's inbound upsert and the completion of the post's fan-out
  record in the same atomic write. When it throws, none or some posts may be done; the caller then retries
  post by post (idempotent)."
  (-fan-out-all! [s deliveries] "Delivers every `{:post stored-post :recipients [ids]}` of `deliveries` (a
  non-empty vector) and completes their fan-out records, in one atomic durable write where the store can."))

(defn batch-fan-out?
  "True when `store` has the `BatchFanOut` capability."
  [store]
  (satisfies? BatchFanOut store))

(defn submit! "Queues a fan-out job, see `Fanout`." [f job] (-submit! f job))
(defn await-idle "True once `f` has no queued or running job, false after `timeout-ms`." [f timeout-ms] (-await-idle f timeout-ms))
(defn stats "Counters of `f`: :submitted :completed :failed :pending :queued (see `Fanout`)." [f] (-stats f))
(defn close! "Drains and stops `f`, waiting at most `timeout-ms`; idempotent." [f timeout-ms] (-close! f timeout-ms))

(defn- thread-factory ^ThreadFactory [prefix]
  (let [n (AtomicLong.)]
    (reify ThreadFactory
      (newThread [_ r]
        (doto (Thread. ^Runnable r (str prefix "-" (.incrementAndGet n)))
          (.setDaemon true))))))

(defn- run-with-retries [work job retries on-error]
  (loop [attempt 0]
    (let [result (try (work job) ::ok (catch Throwable t t))]
      (cond (= ::ok result) true
            (< attempt (long retries))
            (do (Thread/sleep (long (* 10 (Math/pow 10 attempt)))) (recur (inc attempt)))
            :else (do (on-error result job) false)))))

(defn executor-fanout
  "An in-process `Fanout` on a bounded thread pool, calling `(work job)` for each job (the
  `:fanout {:runtime :executor}` fallback).

  | key           | type | default | meaning |
  |---------------|------|---------|---------|
  | `:threads`    | long | 2       | worker threads |
  | `:queue-size` | long | 10000   | queued jobs before the submitting thread runs the job itself |
  | `:retries`    | long | 3       | retries of a failing job (10 ms, 100 ms, 1 s apart) |
  | `:on-error`   | fn   | prints  | (fn [throwable job]) after the last retry failed |"
  [work {:keys [threads queue-size retries on-error]
         :or {threads 2 queue-size 10000 retries 3}}]
  (doseq [[k v] {:threads threads :queue-size queue-size :retries retries}]
    (when-not (and (integer? v) (or (pos? v) (and (= k :retries) (zero? v))))
      (throw (ex-info (str "fan-out option " k " must be a positive integer, got " (pr-str v))
                      {:type :herald.feed/config :key k :value v}))))
  (let [on-error (or on-error (fn [^Throwable t job]
                                (binding [*out* *err*]
                                  (println "fan-out of post" (get-in job [:post :id]) "failed:" (.getMessage t)))))
        pending (AtomicLong.) submitted (AtomicLong.) completed (AtomicLong.) failed (AtomicLong.)
        lock (Object.)
        pool (ThreadPoolExecutor. (int threads) (int threads) 60 TimeUnit/SECONDS
                                  (ArrayBlockingQueue. (int queue-size))
                                  (thread-factory "herald-fanout")
                                  (reify RejectedExecutionHandler
                                    (rejectedExecution [_ r ex]
                                      (if (.isShutdown ex)
                                        (throw (java.util.concurrent.RejectedExecutionException. "fan-out is closed"))
                                        (.run r)))))
        task (fn [job]
               (fn []
                 (try (if (run-with-retries work job retries on-error)
                        (.incrementAndGet completed)
                        (.incrementAndGet failed))
                      (finally
                        (when (zero? (.decrementAndGet pending))
                          (locking lock (.notifyAll lock)))))))]
    (reify Fanout
      (-submit! [_ job]
        (.incrementAndGet pending)
        (.incrementAndGet submitted)
        (try (.execute pool ^Runnable (task job))
             (catch Throwable t
               (.decrementAndGet pending)
               (throw (ex-info "fan-out executor is closed" {:type :herald.feed/unavailable} t)))))
      (-await-idle [_ timeout-ms]
        (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
          (locking lock
            (loop []
              (let [left (- deadline (System/currentTimeMillis))]
                (cond (zero? (.get pending)) true
                      (<= left 0) false
                      :else (do (.wait lock (min left 50)) (recur))))))))
      (-stats [_]
        {:submitted (.get submitted) :completed (.get completed) :failed (.get failed)
         :pending (.get pending) :queued (.size (.getQueue pool))})
      (-close! [_ timeout-ms]
        (.shutdown pool)
        (.awaitTermination pool (long timeout-ms) TimeUnit/MILLISECONDS)))))
