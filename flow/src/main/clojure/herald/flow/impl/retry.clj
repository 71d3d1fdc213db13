(ns herald.flow.impl.retry
  "Retries of an output's writes and flushes (`:output/retries`, `:output/backoff-ms`, `:output/backoff-max-ms`), with one log line when writes start failing and one when they work again."
  (:import (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn log-line!
  "Prints one line of the retry log to stderr (tests redefine it to count the lines)."
  [^String s]
  (.println System/err s))

(defn policy
  "The retry policy of output task map `task`: `{:retries n-or-:forever :backoff-ms :backoff-max-ms :task :job}`."
  [task job-name]
  {:retries (:output/retries task 0) :backoff-ms (long (:output/backoff-ms task 100))
   :backoff-max-ms (long (:output/backoff-max-ms task 30000)) :task (:task/name task) :job job-name})

(defn state
  "The mutable state of one output's retries: consecutive failures, when they began, when the next attempt
  is due, and the total of failed attempts (for metrics). May outlive one thread (Kafka Streams replaces a
  thread that blocked too long: its successor continues the count)."
  []
  {:failures (AtomicLong.) :since (AtomicLong.) :next-at (AtomicLong.) :total (AtomicLong.)})

(defn- wait-ms ^long [{:keys [^long backoff-ms ^long backoff-max-ms]} ^long failures]
  ;; the first retry waits backoff-ms, each further one twice as long, never more than backoff-max-ms
  (min backoff-max-ms (* backoff-ms (bit-shift-left 1 (min 30 (max 0 (dec failures)))))))

(defn- exhausted? [{:keys [retries]} ^long failures]
  (and (not= :forever retries) (> failures (long retries))))

(defn- what [{:keys [task job]}] (str "herald.flow: output " task " of job " job))

(defn- failed!
  "Counts a failed attempt; logs the first of a run of failures."
  [p {:keys [^AtomicLong failures ^AtomicLong since ^AtomicLong next-at ^AtomicLong total]} ^Throwable e]
  (let [n (.incrementAndGet failures) now (System/currentTimeMillis)]
    (.incrementAndGet total)
    (when (= 1 n)
      (.set since now)
      (log-line! (str (what p) " failing, retrying (" (if (= :forever (:retries p)) "forever" (str "up to " (:retries p) " times"))
                      ", first wait " (:backoff-ms p) " ms): " (.toString e))))
    (.set next-at (+ now (wait-ms p n)))
    n))

(defn- succeeded! [p {:keys [^AtomicLong failures ^AtomicLong since]}]
  (let [n (.getAndSet failures 0)]
    (when (pos? n)
      (log-line! (str (what p) " writing again after " n " failed attempt" (when (> n 1) "s") " over "
                      (- (System/currentTimeMillis) (.get since)) " ms")))))

(defn- call*
  "`call!` with retries."
  [p st budget-ms f]
  (let [start (System/currentTimeMillis)
        ^AtomicLong next-at (:next-at st)]
    (loop []
       (let [due (.get next-at) now (System/currentTimeMillis)]
         (when (and (pos? (.get ^AtomicLong (:failures st))) (> due now))
           (when (and budget-ms (> (- due start) (long budget-ms)))
             (throw (ex-info (str (what p) " still failing after " (.get ^AtomicLong (:failures st))
                                  " attempts; the stream thread gives its tasks back to retry from the committed offsets")
                             {:type :herald.flow/output-retry-pending :task (:task p)})))
           (Thread/sleep (- due now))))
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
               (recur))))))))

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

(defn failures
  "`{:write-failures n :failing? bool}` over retry states `sts` (job-metrics of an output): failed attempts
  so far, and whether one of them is in a run of failures now."
  [sts]
  {:write-failures (reduce + 0 (map #(.get ^AtomicLong (:total %)) sts))
   :failing? (boolean (some #(pos? (.get ^AtomicLong (:failures %))) sts))})
