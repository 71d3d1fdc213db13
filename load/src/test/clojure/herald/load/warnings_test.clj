(ns herald.load.warnings-test
  "The wording of the warnings users read: connect failures by cause, an unknown host refused before the
  run, requests never sent worded once for the run and its step, and the sweep's NON-MONOTONE warning."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.load :as load]
            [herald.json :as json]
            [herald.load.impl.sweep :as sweep]
            [herald.load.impl.warnings :as warnings]
            [herald.load.main :as main]
            [herald.load.test-server :as ts])
  (:import (herald.load.client ConnectFailure)
           (io.netty.channel ConnectTimeoutException)
           (java.net ConnectException NoRouteToHostException SocketException UnknownHostException)))

(set! *warn-on-reflection* true)

(deftest connect-failures-are-classified-by-cause
  (doseq [[e want] [[(ConnectException. "finishConnect(..) failed: Connection refused: /127.0.0.1:1") ConnectFailure/REFUSED]
                    [(ConnectTimeoutException. "connection timed out after 10000 ms: /192.0.2.1:80") ConnectFailure/TIMEOUT]
                    [(ConnectException. "connect(..) failed: Connection timed out") ConnectFailure/TIMEOUT]
                    [(NoRouteToHostException. "No route to host") ConnectFailure/UNREACHABLE]
                    [(ConnectException. "connect(..) failed: Network is unreachable") ConnectFailure/UNREACHABLE]
                    [(ConnectException. "finishConnect(..) failed: No route to host") ConnectFailure/UNREACHABLE]
                    [(UnknownHostException. "nohost.invalid") ConnectFailure/UNKNOWN_HOST]
                    [(SocketException. "Permission denied") ConnectFailure/OTHER]
                    [nil ConnectFailure/OTHER]]]
    (is (= want (ConnectFailure/of e)) (str e)))
  (is (= "unknown-host" (.label ConnectFailure/UNKNOWN_HOST))))

(deftest connect-warnings-say-the-cause
  (is (= "651 connect attempts failed and 5 requests were due but never sent: connection refused: is the server up?"
         (warnings/connect-failed 651 5 {:refused 651} "127.0.0.1" nil)))
  (is (= "3 connect attempts failed: connect timed out: is the host up and the port open (not filtered)?"
         (warnings/connect-failed 3 0 {:timeout 3} "10.1.2.3" nil)))
  (is (= "4 connect attempts failed and 2 requests were due but never sent: 10.1.2.3: host unreachable: check the address and the network"
         (warnings/connect-failed 4 2 {:unreachable 4} "10.1.2.3" nil)))
  (is (= "2 connect attempts failed: nohost.invalid: unknown host"
         (warnings/connect-failed 2 0 {:unknown-host 2} "nohost.invalid" nil)))
  (is (= "1 connect attempts failed: connect failed: java.net.SocketException: Permission denied"
         (warnings/connect-failed 1 0 {:other 1} "h" "java.net.SocketException: Permission denied")))
  (testing "several causes: each worded, the most frequent first, with its count"
    (is (= (str "7 connect attempts failed: connection refused: is the server up? (5 attempts); "
                "connect timed out: is the host up and the port open (not filtered)? (2 attempts)")
           (warnings/connect-failed 7 0 {:timeout 2 :refused 5} "h" nil))))
  (is (not (str/includes? (warnings/connect-failed 3 0 {:timeout 3} "h" nil) "refused"))
      "a timeout is not reported as a refused connection"))

(deftest a-step-short-because-connects-failed-says-so
  (let [step {:step 2 :label "200/s" :unsent 26
              :warnings ["STEP 2 (200/s): ACHIEVED RATE 0.0/s IS BELOW THE TARGET 200.0/s: the generator or the server fell short"
                         (str "STEP 2 (200/s): " (warnings/never-sent 26))]}
        why (warnings/causes-text {:refused 9} 9 "h" nil)]
    (is (= ["STEP 2 (200/s): ACHIEVED RATE 0.0/s IS BELOW THE TARGET 200.0/s: the generator or the server fell short"
            "STEP 2 (200/s): 26 requests were due but never sent: connection refused: is the server up?"]
           (:warnings (warnings/unsent-while-connects-failed step why))))
    (is (= (assoc step :unsent 0) (warnings/unsent-while-connects-failed (assoc step :unsent 0) why)) "nothing unsent: unchanged")))

(deftest never-sent-is-one-wording-naming-the-option-as-typed
  (is (= "26 requests were due but never sent (no free connection at the end): raise --connections"
         (warnings/never-sent 26)))
  (is (str/ends-with? (warnings/waited 658 67.6 16 4) "raise --connections"))
  (is (not (re-find #":connections" (warnings/waited 658 67.6 16 nil)))))

(deftest an-unknown-host-is-a-usage-error-before-the-run
  ;; .invalid never resolves (RFC 6761): the resolver fails at once, offline too
  (let [sent (atom 0)
        e (try (load/rate {:url "http://nohost.invalid:80/" :rate 5 :duration 1 :progress :quiet
                           :on-send (fn [& _] (swap! sent inc))})
               nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= :herald.load/bad-option (:type (ex-data e))) (pr-str (ex-data e)))
    (is (= :url (:key (ex-data e))))
    (is (str/starts-with? (ex-message e) "nohost.invalid: unknown host") (ex-message e))
    (is (zero? @sent) "nothing was sent"))
  (testing "the command line: exit 1 (usage error) with the cause, no run, for rate, max, sweep and feed"
    (doseq [args [["rate" "http://nohost.invalid:80/" "-R" "5" "-d" "1s"]
                  ["max" "http://nohost.invalid/" "-d" "1s"]
                  ["sweep" "http://nohost.invalid/x" "-d" "1s" "--max-rate" "100" "--p99" "20"]
                  ["feed" "--host" "nohost.invalid" "--port" "8080" "-d" "1s"]]]
      (let [err (java.io.StringWriter.)
            t0 (System/nanoTime)
            [code out] (binding [*err* err] (let [c (atom nil) o (with-out-str (reset! c (main/run-cli args)))] [@c o]))]
        (is (= 1 code) (str args " " err))
        (is (str/includes? (str err) "herald-load: nohost.invalid: unknown host") (str args " " err))
        (is (not (str/includes? (str err out) "refused")) (str err out))
        (is (not (str/includes? out "herald-load mode=")) "no run")
        ;; "no run" above is the point; this bound only catches a hang (a resolver's own timeouts take seconds)
        (is (< (/ (- (System/nanoTime) t0) 1e9) 30.0) "fails before any run")))))

(deftest ^:integration a-refused-connect-is-counted-by-cause
  (let [port (with-open [ss (java.net.ServerSocket. 0)] (.getLocalPort ss))
        r (load/rate {:url (str "http://127.0.0.1:" port "/") :rate 20 :duration 0.5 :connections 2 :progress :quiet})]
    (is (= [:refused] (keys (:connect-failure-causes r))) (pr-str (:connect-failure-causes r)))
    (is (some #(re-find #"connect attempts failed.*: connection refused: is the server up\?$" %) (:warnings r)) (pr-str (:warnings r)))
    (let [step (first (:steps r))]
      (is (pos? (:unsent step)))
      (is (some #{(str "STEP 1 (20/s): " (:unsent step) " requests were due but never sent: connection refused: is the server up?")}
                (:warnings step))
          "the step says why too")
      (is (not-any? #(str/includes? % "--connections") (concat (:warnings r) (:warnings step)))))))

(deftest ^:integration never-sent-reads-the-same-for-the-run-and-its-step
  ;; one connection to a server that holds the first request 1.5 s: the other requests of the 1 s step
  ;; never find the connection free, and the run and its step (stdout and summary.json) say so in one wording
  (ts/with-server [s (fn [ex] (Thread/sleep 1500) (ts/hello ex)) 1]
    (let [dir (str (java.nio.file.Files/createTempDirectory "herald-load-warn" (make-array java.nio.file.attribute.FileAttribute 0)))
          out (with-out-str (binding [*err* (java.io.StringWriter.)]
                              (main/run-cli ["rate" (:url s) "-R" "10" "-d" "1s" "-c" "1" "-t" "1" "--timeout" "5s" "-q" "-o" dir])))
          summary (json/read (java.nio.file.Files/readAllBytes (java.nio.file.Path/of dir (into-array String ["summary.json"]))) {:keywords? true})
          step (first (:steps summary))
          n (:unsent step)]
      (is (pos? n) (pr-str step))
      (is (= n (:backlog summary)) "the run's backlog is the step's unsent requests")
      (is (str/includes? out (str "WARNING: " (warnings/never-sent n))) out)
      (is (some #{(str "STEP 1 (10/s): " (warnings/never-sent n))} (:warnings step)) (pr-str (:warnings step)))
      (is (not (str/includes? out "found no free connection")) out)
      (is (not (str/includes? out ":connections")) out))))

(deftest non-monotone-names-the-failed-steps-and-why-the-wall-is-none
  (let [steps [{:rate 400 :ok? false} {:rate 2000 :ok? true} {:rate 4000 :ok? true} {:rate 6000 :ok? true}]]
    (is (nil? (sweep/wall steps)))
    (is (= (str "NON-MONOTONE: 1 step(s) below 6000/s failed the bound (400/s failed) while 6000/s passed; "
                "the wall is none (the first step failed): repeat with a longer -d")
           (sweep/non-monotone-warning steps))))
  (let [steps [{:rate 100 :ok? true} {:rate 200 :ok? false} {:rate 300 :ok? false} {:rate 400 :ok? true} {:rate 500.5 :ok? false}]]
    (is (= (str "NON-MONOTONE: 2 step(s) below 400/s failed the bound (200/s, 300/s failed) while 400/s passed; "
                "the wall is 100/s (every step up to it passed): repeat with a longer -d")
           (sweep/non-monotone-warning steps)))))

(deftest ^:integration sweep-whose-first-step-fails-says-so-on-the-command-line
  ;; the server holds every request of its first 0.6 s for 500 ms: the 20/s step fails a 200 ms p99 bound,
  ;; the 40/s step after it passes
  (ts/when-calm
  (let [t0 (atom nil)]
    (ts/with-server [s (fn [ex]
                         (let [now (System/nanoTime)]
                           (compare-and-set! t0 nil now)
                           (when (< (- now (long @t0)) 600000000) (Thread/sleep 500))
                           (ts/hello ex))) 16]
      (let [out (with-out-str (binding [*err* (java.io.StringWriter.)]
                                (main/run-cli ["sweep" (:url s) "--rates" "20,40" "-d" "1s" "-c" "16" "--p99" "200" "-q"])))]
        (is (str/includes? out "the wall is none (the first step failed)") out)
        (is (str/includes? out "(20/s failed) while 40/s passed") out)
        (is (not (str/includes? out "every step up to it passed")) out))))))

(deftest a-busy-generator-thread-is-warned-about-in-rate-runs-only
  (let [w (warnings/busy-io 0.86 1)]
    (is (str/starts-with? w "THE GENERATOR'S BUSIEST I/O THREAD WAS 86% BUSY in the recorded window") w)
    (is (str/includes? w "a stall of d ms takes about 6.1 x d to catch up") (str "0.86 / 0.14 = 6.1: " w))
    (is (re-find #"(raise --threads|run the generator on more cores)" w) w))
  (let [warn #'herald.load.impl.run/warnings
        of (fn [mode busy] (warn mode 100.0 100.0 0 0 {} {} [] busy 1 {:host "h"}))]
    (is (= [(warnings/busy-io 0.71 1)] (of :rate [0.2 0.71 nil])) "the busiest thread's share, unknown ones skipped")
    (is (= [] (of :rate [0.69 nil])) "below the share: no warning")
    (is (= [] (of :rate [nil])) "unknown: no warning")
    (is (= [] (of :max [0.99])) "a max run keeps its threads busy on purpose")))
