(ns herald.flow.impl.retry
  "Retries of an output's writes and flushes (`:output/retries`, `:output/backoff-ms`, `:output/backoff-max-ms`), with one log line when writes start failing and one when they work again; segments the plugin rejects for good (`:output/rejected?`, `:output/rejected-retries`) handed to the job's `:on-error` instead of held forever, and so is any segment still failing past a time budget (`:output/give-up-after-ms`)."
  (:require [herald.flow.impl.types :as types])
  (:import (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn log-line!
  "Prints one line of the retry log to stderr (tests redefine it to count the lines)."
  [^String s]
  (.println System/err s))

(defn policy
  "The retry policy of output task map `task`: `{:retries n-or-:forever :backoff-ms :backoff-max-ms :task :job
  :rejected? fn-or-nil :rejected-retries n :give-up-after-ms ms-or-nil}`."
  [task job-name]
  {:retries (:output/retries task 0) :backoff-ms (long (:output/backoff-ms task 100))
   :backoff-max-ms (long (:output/backoff-max-ms task 30000)) :task (:task/name task) :job job-name
   :rejected? (some-> (:output/rejected? task) types/resolve-fn)
   :rejected-retries (long (:output/rejected-retries task 10))
   :give-up-after-ms (:output/give-up-after-ms task)})

(defn on-error-policy
  "The retry policy of the job's `:on-error` on `:kafka-streams` (`call!`): a handler that throws (a dead-letter
  topic that cannot be written) is called again for the same segment, after 100 ms, then twice as long each time
  up to 10 s, for as long as it takes: the record it is about is never dropped."
  [task-name job-name]
  {:retries :forever :backoff-ms 100 :backoff-max-ms 10000 :task task-name :job job-name
   :what (str "herald.flow: :on-error of task " task-name " of job " job-name) :again "handling errors again"})

(defn state
  "The mutable state of one output's retries: consecutive failures, when they began, when the next attempt
  is due, and the total of failed attempts (for metrics). May outlive one thread (Kafka Streams replaces a
  thread that blocked too long: its successor continues the count)."
  []
  {:failures (AtomicLong.) :since (AtomicLong.) :next-at (AtomicLong.) :total (AtomicLong.)
   ;; consecutive failed attempts the plugin rejected (`:output/rejected?`), and the segments handed on for good
   :rejected (AtomicLong.) :dead (AtomicLong.)
   ;; when the run's last log line was printed (a reminder every `:remind-ms` of the policy, 60 s by default)
   :reminded (AtomicLong.)})

(defn- wait-ms ^long [{:keys [^long backoff-ms ^long backoff-max-ms]} ^long failures]
  ;; the first retry waits backoff-ms, each further one twice as long, never more than backoff-max-ms
  (min backoff-max-ms (* backoff-ms (bit-shift-left 1 (min 30 (max 0 (dec failures)))))))

(defn- exhausted? [{:keys [retries]} ^long failures]
  (and (not= :forever retries) (> failures (long retries))))

(defn- what [{:keys [task job] :as p}] (or (:what p) (str "herald.flow: output " task " of job " job)))

(defn- failed!
  "Counts a failed attempt; logs the first of a run of failures, and a reminder every minute while it lasts."
  [p {:keys [^AtomicLong failures ^AtomicLong since ^AtomicLong next-at ^AtomicLong total] :as st} ^Throwable e]
  (let [n (.incrementAndGet failures) now (System/currentTimeMillis) ^AtomicLong reminded (:reminded st)]
    (.incrementAndGet total)
    (cond (= 1 n)
          (do (.set since now)
              (.set reminded now)
              (log-line! (str (what p) " failing, retrying (" (if (= :forever (:retries p)) "forever" (str "up to " (:retries p) " times"))
                              ", first wait " (:backoff-ms p) " ms): " (.toString e))))
          ;; a long run of failures: one reminder a minute (`:remind-ms`), never a line per attempt
          (>= (- now (.get reminded)) (long (:remind-ms p 60000)))
          (do (.set reminded now)
              (log-line! (str (what p) " still failing after " n " attempts over " (- now (.get since)) " ms: " (.toString e)))))
    (.set next-at (+ now (wait-ms p n)))
    n))

(defn- succeeded! [p {:keys [^AtomicLong failures ^AtomicLong since]}]
  (let [n (.getAndSet failures 0)]
    (when (pos? n)
      (log-line! (str (what p) " " (:again p "writing again") " after " n " failed attempt" (when (> n 1) "s") " over "
                      (- (System/currentTimeMillis) (.get since)) " ms")))))

(defn failing?
  "True when state `st` is in a run of failures (its last attempt failed)."
  [st]
  (pos? (.get ^AtomicLong (:failures st))))

(defn end-run!
  "Ends the run of failures in state `st` without a success: its caller will not try again (on Kafka Streams, the
  stream task whose record it was closed; whoever reads the record again starts a run of its own). Keeps the total."
  [st]
  (.set ^AtomicLong (:failures st) 0))

(defn continue-run!
  "Makes state `st` continue the run of failures of state `prev` (its attempts, when it began, when the next
  attempt is due, the last reminder): a thread taking over the stream tasks of a replaced one. The totals stay
  where they are."
  [st prev]
  (doseq [k [:since :next-at :reminded :rejected :failures]]
    (.set ^AtomicLong (k st) (.get ^AtomicLong (k prev)))))

(defn- stopping!
  "Throws `:herald.flow/output-retry-pending`: the job stops (policy `:stop?`), so a failing call is not tried again
  (on Kafka Streams its tasks close without committing; the records are read again when the job runs again)."
  [p st]
  (throw (ex-info (str (what p) " stops retrying after " (.get ^AtomicLong (:failures st)) " failed attempts: the job is stopping, or its stream thread closing")
                  {:type :herald.flow/output-retry-pending :task (:task p) :stopping true})))

(defn- sleep!
  "Sleeps `ms`; with a `:stop?` fn in policy `p` (Kafka Streams, whose close does not interrupt its threads), in
  slices of at most 100 ms, and `stopping!` once it answers true."
  [p st ^long ms]
  (if-let [stop? (:stop? p)]
    (let [end (+ (System/currentTimeMillis) ms)]
      (loop []
        (when (stop?) (stopping! p st))
        (let [left (- end (System/currentTimeMillis))]
          (when (pos? left) (Thread/sleep (min left 100)) (recur)))))
    (Thread/sleep ms)))

(defn- await-due!
  "Sleeps until the next attempt of a failing output is due. Past `budget-ms` since `start` (when given)
  throws `:herald.flow/output-retry-pending` instead, unless this call has not made an attempt yet: then it
  sleeps at most the budget, so that every call tries at least once. A failing call of a job that is stopping
  (`:stop?`) throws the same at once."
  [p st start budget-ms attempted?]
  (let [due (.get ^AtomicLong (:next-at st)) now (System/currentTimeMillis)]
    (when (and (failing? st) (some-> (:stop? p) (apply [])))
      (stopping! p st))
    (when (and (failing? st) (> due now))
      (when (and budget-ms attempted? (> (- due (long start)) (long budget-ms)))
        (throw (ex-info (str (what p) " still failing after " (.get ^AtomicLong (:failures st))
                             " attempts; the stream thread gives its tasks back to retry from the committed offsets")
                        {:type :herald.flow/output-retry-pending :task (:task p)})))
      (sleep! p st (if budget-ms (min (- due now) (long budget-ms)) (- due now))))))

(defn- call*
  "`call!` with retries."
  [p st budget-ms f]
  (let [start (System/currentTimeMillis)]
    (loop [attempted? false]
      (await-due! p st start budget-ms attempted?)
      (let [r (try {:ok (f)}
                   (catch InterruptedException e (throw e))
                   (catch Exception e {:error e}))]
        (if (contains? r :ok)
          (do (succeeded! p st) (:ok r))
          (let [e ^Exception (:error r) n (failed! p st e)]
            (if (exhausted? p n)
              (do (log-line! (str (what p) " gave up after " (dec n) " retries: " (.toString e)))
                  (.set ^AtomicLong (:failures st) 0)
                  (throw e))
              (recur true))))))))

(defn call!
  "Calls `(f)`, retrying under policy `p` with retry state `st` (see `state`): waits the backoff before each
  retry. A failure past the retries is logged and rethrown as is (the task fails, as without retries). With
  `budget-ms`, when waiting for the next attempt would block this call longer than that, throws
  `{:type :herald.flow/output-retry-pending}` instead (the Kafka Streams runtime then replaces the stream
  thread, which resumes from the committed offsets and continues the same count). Interruptible."
  ([p st f] (call! p st nil f))
  ([p st budget-ms f]
   (if (= 0 (:retries p))
     (f)
     (call* p st budget-ms f))))

(defn- rejected? [p e]
  (boolean (some-> (:rejected? p) (apply [e]))))

(defn- given-up?
  "True when the output's current run of failures began `:give-up-after-ms` ago or more."
  [{:keys [give-up-after-ms]} {:keys [^AtomicLong failures ^AtomicLong since]}]
  (boolean (and give-up-after-ms (pos? (.get failures))
                (>= (- (System/currentTimeMillis) (.get since)) (long give-up-after-ms)))))

(defn- failure-info
  "What `on-reject` learns of the run of failures in `st` besides the segment: the attempts (the run's failed
  attempts and the last one), when the run began and now."
  [{:keys [^AtomicLong failures ^AtomicLong since]}]
  {:attempts (inc (.get failures)) :first-failure-at (let [t (.get since)] (if (pos? t) t (System/currentTimeMillis)))
   :last-failure-at (System/currentTimeMillis)})

(defn- hand-on!
  "Hands `seg` on with `on-reject`, then counts it: should `on-reject` throw (a dead-letter topic down), the write
  counts as failed and the segment is not counted as handed on."
  [st on-reject seg e]
  (on-reject seg e (failure-info st))
  (.incrementAndGet ^AtomicLong (:dead st)))

(defn- bisect!
  "Writes segment vector `v` with `(w v)`; when the plugin rejects it (or fails at all, with `any?`), each half
  on its own, down to single segments, which go to `(on-reject segment exception info)` (`failure-info`). Any
  other failure is thrown (an outage: `write!` retries the whole batch; what was written is written again, which
  outputs must bear: they are at least once). With `any?`, once a write failed and `deadline` (epoch ms, or nil)
  has passed, the segments not tried yet are handed on untried with that failure: splitting a batch whose every
  write waits for a timeout must not hold the thread past its poll budget."
  [p st w on-reject any? deadline last v]
  (if (and any? deadline @last (> (System/currentTimeMillis) (long deadline)))
    (doseq [seg v] (hand-on! st on-reject seg @last))
    (try (w v)
         (catch InterruptedException e (throw e))
         (catch Exception e
           (vreset! last e)
           (cond (not (or any? (rejected? p e))) (throw e)
                 (= 1 (count v)) (hand-on! st on-reject (nth v 0) e)
                 :else (let [h (quot (count v) 2)]
                         (bisect! p st w on-reject any? deadline last (subvec v 0 h))
                         (bisect! p st w on-reject any? deadline last (subvec v h))))))))

(defn- give-up!
  "The attempt of a batch past `:give-up-after-ms`: `bisect!` handing on every segment that still fails (trying
  until `deadline`, epoch ms, when given), then one log line, and the run of failures ends (the next batch gets a
  budget of its own)."
  [p st deadline w on-reject v]
  (let [^AtomicLong dead (:dead st) before (.get dead) ^AtomicLong failures (:failures st)
        n (.get failures) since (.get ^AtomicLong (:since st))]
    (bisect! p st w on-reject true deadline (volatile! nil) v)
    (let [k (- (.get dead) before)]
      (log-line! (str (what p) ": " (if (pos? k) (str "gave up on " k " of " (count v) " segments (handed to :on-error)")
                                        (str "wrote the batch of " (count v) " again"))
                      " after " n " failed attempt" (when (> n 1) "s") " over " (- (System/currentTimeMillis) since) " ms")))
    (.set failures 0)))

(defn write!
  "Writes segment vector `v` with `(w v)` (the plugin's `-write!`) under `call!` (policy `p`, state `st`,
  `budget-ms`). With `:rejected?` in the policy (`:output/rejected?`: a fn of the exception, true when the plugin
  refuses the segments themselves, such as a bad value, and not for an outage), a batch rejected
  `:rejected-retries` times in a row is written in halves, down to the segments it refuses, and each of those
  goes to `(on-reject segment exception info)` (the job's `:on-error`; `info`: `{:attempts :first-failure-at
  :last-failure-at}`): a bad segment no longer holds its output (and on Kafka its partition) forever, while an
  outage is still retried under `:output/retries`. With `:give-up-after-ms`, an attempt due that long after the
  run's first failure is written in halves whatever the failure, and what still fails is handed on alike."
  [p st budget-ms w on-reject v]
  (if-not (or (:rejected? p) (:give-up-after-ms p))
    (call! p st budget-ms #(w v))
    ;; the split's deadline counts from this call's start, as `call!`'s budget does: retries before the give-up
    ;; already blocked the thread for part of it
    (let [^AtomicLong rej (:rejected st) deadline (some->> budget-ms (+ (System/currentTimeMillis)))]
      (call! p st budget-ms
             (fn []
               (cond (given-up? p st) (give-up! p st deadline w on-reject v)
                     (and (:rejected? p) (>= (.get rej) (long (:rejected-retries p))))
                     (bisect! p st w on-reject false nil (volatile! nil) v)
                     :else (try (w v)
                                (catch Exception e
                                  (when (rejected? p e) (.incrementAndGet rej))
                                  (throw e))))))
      (.set rej 0))))

(defn failures
  "`{:write-failures n :failing? bool :rejected-segments n}` over retry states `sts` (job-metrics of an output):
  failed attempts so far, whether one of them is in a run of failures now, and the segments given up as
  rejected (`write!`)."
  [sts]
  {:write-failures (reduce + 0 (map #(.get ^AtomicLong (:total %)) sts))
   :failing? (boolean (some failing? sts))
   :rejected-segments (reduce + 0 (map #(.get ^AtomicLong (:dead %)) sts))})
