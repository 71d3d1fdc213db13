(ns herald.load.impl.warnings
  "The wording of the warnings a run and its steps share, in one place: requests never sent for want of
  a free connection, and connect attempts that failed, said by cause (refused, timed out, unreachable,
  unknown host). Options are named as the command line spells them."
  (:require [clojure.string :as str])
  (:import (herald.load.client ConnectFailure)))

(set! *warn-on-reflection* true)

(def raise-connections
  "The advice when connections are short, naming the option as the user types it."
  "raise --connections")

(defn never-sent
  "Requests due but never sent because no connection was free when the run (or step) ended."
  [n]
  (format "%d requests were due but never sent (no free connection at the end): %s" (long n) raise-connections))

(defn waited
  "Requests of a step that waited for a free connection: `share` in percent, `connections` of the run,
  `needed` the connections the step keeps busy on average (nil when unknown)."
  [n share connections needed]
  (format "%d requests (%.1f%%) WAITED FOR A FREE CONNECTION: all %d were busy (on average the step keeps about %s busy, target x mean service time%s): %s"
          (long n) (double share) (long connections) (or needed "?")
          (if (and needed (< (* 2 (long needed)) (long connections))) ", so the server or the generator stalled at times" "")
          raise-connections))

(defn cause-text
  "What a connect failure of kind `cause` (a keyword of ConnectFailure's labels) means, for host `host`;
  `other` is the message of an :other failure."
  [cause host other]
  (case cause
    :refused "connection refused: is the server up?"
    :timeout "connect timed out: is the host up and the port open (not filtered)?"
    :unreachable (str host ": host unreachable: check the address and the network")
    :unknown-host (str host ": unknown host")
    :tls (str "TLS handshake failed: " (or other "unknown cause")
              ": --cacert FILE trusts a server's certificate, --insecure any (testing only)")
    :protocol (str "HTTP/2 did not start: " (or other "unknown cause"))
    (str "connect failed: " (or other "unknown cause"))))

(defn connect-causes
  "The connect failures of `engine`-like counts by cause: {cause-keyword count} of the nonzero ones, from
  `count-of` (fn of a ConnectFailure)."
  [count-of]
  (into (sorted-map) (for [^ConnectFailure c (ConnectFailure/values)
                           :let [n (long (count-of c))] :when (pos? n)]
                       [(keyword (.label c)) n])))

(defn causes-text
  "`causes` ({cause count}) worded each (with its count when there are several, the most frequent first);
  `attempts` stands for an unknown cause when `causes` is empty."
  [causes attempts host other]
  (let [causes (if (seq causes) causes {:other attempts})]
    (str/join "; " (for [[c n] (sort-by (comp - val) causes)]
                     (cond-> (cause-text c host other) (> (count causes) 1) (str " (" n " attempts)"))))))

(defn connect-failed
  "The run-level warning of `attempts` failed connect attempts while `backlog` requests were due but never
  sent, with `causes` ({cause count}) worded each (with its count when there are several)."
  [attempts backlog causes host other]
  (format "%d connect attempts failed%s: %s" (long attempts)
          (if (pos? backlog) (format " and %d requests were due but never sent" (long backlog)) "")
          (causes-text causes attempts host other)))

(defn unsent-while-connects-failed
  "Step map `step` with its never-sent warning saying that connects failed (`why`, from `causes-text`)
  instead of advising more connections: the run's connect warning and the step's then agree."
  [step why]
  (let [tag (format "STEP %d (%s): " (long (:step step)) (:label step))
        n (long (or (:unsent step) 0))
        was (str tag (never-sent n))]
    (if (pos? n)
      (update step :warnings #(mapv (fn [w] (if (= w was) (format "%s%d requests were due but never sent: %s" tag n why) w)) %))
      step)))

(def busy-io-share
  "An event loop thread of the generator busier than this (0-1) in a rate run's recorded window gets a warning:
  it queues sends and responses itself, and a stall of d ms then takes about d x u/(1-u) to catch up."
  0.7)

(defn busy-io
  "The warning for a rate run whose busiest generator I/O thread was `u` (0-1) busy in the window, of `threads`."
  [u threads]
  (format "THE GENERATOR'S BUSIEST I/O THREAD WAS %.0f%% BUSY in the recorded window: its own queueing is part of the measured latency (at this load a stall of d ms takes about %.1f x d to catch up): %s"
          (* 100 (double u)) (/ (double u) (max 0.01 (- 1 (double u))))
          (if (< (long threads) (.availableProcessors (Runtime/getRuntime)))
            "raise --threads, or lower the rate"
            "lower the rate, or run the generator on more cores or another machine")))
