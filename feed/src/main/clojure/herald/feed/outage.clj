(ns herald.feed.outage
  "Outage reporting: one concise log line per state change of a backend (down, still down every N seconds, back)
  instead of a line, or a stack trace, per failed call.

  A backend keeps one reporter, calls `failed!` when a call to its server fails for want of the server
  (connection refused, timeout, pool exhausted: not a bad statement) and `ok!` when one succeeds, and puts
  `(reported r)` into the ex-info it throws, so the HTTP layer does not log that request again. `ok!` costs one
  volatile read while the backend is up, so it belongs on every successful call.

  Calls overlap, so a call's answer may arrive after the state changed: a call sent just before the server went
  down can succeed after another one failed, and one that waited through the outage can fail after another one
  saw the server back. A caller that reads `(epoch r)` before the call and passes it to `ok!` / `failed!` keeps
  such a stale answer from flipping the state back (which would log a second down or back line).

  The lines, at WARN (down, still down) and INFO (back), on the slf4j logger `herald.feed.outage`:

      redis is down: redis: reading [:participant 7] failed: Failed to connect to 127.0.0.1:6379 (Connection refused)
      redis is still down after 10.0 s: 31157 failed calls; last error: ...
      redis is back after 12.3 s down: 35002 failed calls

  Wired into herald.feed.store.redis, .postgres, .opensearch and .cassandra (its calls report ::timeout and
  ::unavailable driver errors; the driver's own reconnection warnings are its own). Other errors are covered by
  the HTTP layer's fallback (a reporter per error type, herald.feed.handlers)."
  (:require [clojure.string :as str])
  (:import (java.util.concurrent.atomic AtomicLong)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger default-logger (LoggerFactory/getLogger "herald.feed.outage"))

(defn- slf4j-log [level ^String msg]
  (case level
    :warn (.warn default-logger msg)
    :info (.info default-logger msg)))

(defn- short-message
  "The error of `t` in one line of at most 300 characters: its message, and its root cause's when different."
  ^String [^Throwable t]
  (let [root (last (take-while some? (iterate ex-cause t)))
        msg (str (or (ex-message t) (.getName (class t)))
                 (when (and (not (identical? root t)) (not (str/includes? (str (ex-message t)) (str (ex-message root)))))
                   (str " (" (.getName (class root)) ": " (ex-message root) ")")))
        line (str/replace msg #"\s*[\r\n]+\s*" " ")]
    (if (> (count line) 300) (str (subs line 0 297) "...") line)))

(defn reporter
  "A reporter for the backend named `backend` (a string such as \"redis\" or \"postgres\").

  | key              | type | default          | meaning                                                      |
  |------------------|------|------------------|--------------------------------------------------------------|
  | `:interval-ms`   | long | 10000            | while down, a summary line at most this often (on a failed call) |
  | `:quiet-back-ms` | long | nil              | for callers that never see a success: a failure this long after the previous one ends the old outage (its back line) and starts a new one |
  | `:log`           | fn   | slf4j            | (fn [level msg]), level :warn or :info (tests capture lines with it) |
  | `:clock`         | fn   | currentTimeMillis | (fn [] epoch-ms)                                            |"
  ([backend] (reporter backend {}))
  ([backend {:keys [interval-ms quiet-back-ms log clock] :or {interval-ms 10000 log slf4j-log}}]
   ;; :state holds nil while up, {:since ms :last-line ms :last-failure ms} while down
   {:backend backend :interval-ms (long interval-ms) :quiet-back-ms quiet-back-ms :log log
    :clock (or clock #(System/currentTimeMillis)) :lock (Object.) :failures (AtomicLong.) :state (volatile! nil)
    ;; incremented on every change of state (down, back): see `epoch`
    :epoch (AtomicLong.)}))

(defn epoch
  "The reporter's count of state changes so far: read before a call and passed to `ok!` / `failed!`, it lets them
  ignore, for the state, the answer of a call that started before the last change."
  ^long [r]
  (.get ^AtomicLong (:epoch r)))

(defn- secs ^String [ms] (format "%.1f s" (/ (double ms) 1000.0)))

(defn- back-line! [{:keys [backend log ^AtomicLong failures ^AtomicLong epoch]} since now why]
  (.incrementAndGet epoch)
  (log :info (str backend " is back after " (secs (- (long now) (long since))) " down" why ": "
                  (.getAndSet failures 0) " failed calls")))

(defn failed!
  "Records a failed call of the reporter's backend, `t` its error; logs the down line on the first failure and a
  summary line when :interval-ms passed since the last line. With `call-epoch` (see `epoch`), a failure of a call
  that started before the backend was last seen back does not declare a new outage. Returns nil."
  ([r t] (failed! r t Long/MAX_VALUE))
  ([{:keys [backend interval-ms quiet-back-ms log clock lock ^AtomicLong failures ^AtomicLong epoch state] :as r}
    ^Throwable t ^long call-epoch]
   (locking lock
     (let [now (long (clock))
           s @state
           ;; before a quiet-back below: a call that saw this outage is not stale for the next one
           stale? (< call-epoch (.get epoch))
           quiet (when s (- now (long (:last-failure s))))
           s (if (and quiet quiet-back-ms (> (long quiet) (long quiet-back-ms)))
               (do (back-line! r (:since s) (:last-failure s) (str " (no failure for " (secs quiet) ")"))
                   (vreset! state nil))
               s)]
       (cond
         (and (nil? s) stale?)
         nil ; started while the backend was down, before it came back: the outage it saw is over

         (nil? s)
         (do (.incrementAndGet failures)
             (.incrementAndGet epoch)
             (vreset! state {:since now :last-line now :last-failure now})
             (log :warn (str backend " is down: " (short-message t))))

         (>= (- now (long (:last-line s))) (long interval-ms))
         (let [n (.incrementAndGet failures)]
           (vreset! state (assoc s :last-line now :last-failure now))
           (log :warn (str backend " is still down after " (secs (- now (long (:since s)))) ": "
                           n " failed calls; last error: " (short-message t))))

         :else (do (.incrementAndGet failures)
                   (vreset! state (assoc s :last-failure now))))))
   nil))

(defn ok!
  "Records a successful call: logs the back line when the backend was down. With `call-epoch` (see `epoch`), the
  success of a call that started before the backend went down does not end the outage. One volatile read while
  up. Returns nil."
  ([r] (ok! r Long/MAX_VALUE))
  ([{:keys [lock clock state ^AtomicLong epoch] :as r} ^long call-epoch]
   (when @state
     (locking lock
       (when-let [s @state]
         (when (>= call-epoch (.get epoch))
           (vreset! state nil)
           (back-line! r (:since s) (clock) "")))))
   nil))

(defn down?
  "True while the reporter's backend is down (a failure since the last success)."
  [{:keys [state]}]
  (some? @state))

(defn reported
  "ex-info data `data` marked as reported by `r`: the HTTP layer logs no line of its own for it."
  [data r]
  (assoc data ::reported-by (:backend r)))

(defn reported?
  "True when ex-info `e` (or a cause of it) carries the mark of `reported`."
  [^Throwable e]
  (boolean (some #(contains? (ex-data %) ::reported-by) (take-while some? (iterate ex-cause e)))))
