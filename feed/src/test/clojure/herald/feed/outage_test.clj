(ns herald.feed.outage-test
  "The outage reporter: one line down, a summary per interval while down, one line back, with the counts."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.outage :as outage]))

(set! *warn-on-reflection* true)

(defn- fixture
  "[reporter lines-atom clock-atom] with a captured log and a hand-moved clock."
  [opts]
  (let [lines (atom []) now (atom 1000)]
    [(outage/reporter "redis" (merge {:interval-ms 10000 :log (fn [level msg] (swap! lines conj [level msg]))
                                      :clock #(deref now)}
                                     opts))
     lines now]))

(deftest down-summary-back
  (let [[r lines now] (fixture {})
        err (ex-info "redis: fetch failed" {:type :x} (java.net.ConnectException. "Connection refused"))]
    (outage/ok! r)
    (is (= [] @lines) "nothing while up")
    (dotimes [_ 1000] (outage/failed! r err))
    (is (outage/down? r))
    (is (= [[:warn "redis is down: redis: fetch failed (java.net.ConnectException: Connection refused)"]] @lines))
    (swap! now + 9999)
    (outage/failed! r err)
    (is (= 1 (count @lines)) "no summary before the interval")
    (swap! now + 1)
    (outage/failed! r err)
    (is (= [:warn "redis is still down after 10.0 s: 1002 failed calls; last error: redis: fetch failed (java.net.ConnectException: Connection refused)"]
           (peek @lines)))
    (swap! now + 2500)
    (outage/ok! r)
    (outage/ok! r)
    (is (= [:info "redis is back after 12.5 s down: 1002 failed calls"] (peek @lines)))
    (is (= 3 (count @lines)))
    (is (not (outage/down? r)))
    (outage/failed! r err)
    (is (= "redis is down: redis: fetch failed (java.net.ConnectException: Connection refused)" (second (peek @lines)))
        "a new outage is a new down line")))

(deftest quiet-back-for-callers-without-successes
  (let [[r lines now] (fixture {:quiet-back-ms 5000})
        err (ex-info "boom" {:type :x})]
    (outage/failed! r err)
    (outage/failed! r err)
    (swap! now + 6000)
    (outage/failed! r err)
    (is (= [[:warn "redis is down: boom"]
            [:info "redis is back after 0.0 s down (no failure for 6.0 s): 2 failed calls"]
            [:warn "redis is down: boom"]]
           @lines))))

(deftest reported-marks-the-error-and-its-wrappers
  (let [[r] (fixture {})
        e (ex-info "x" (outage/reported {:type :herald.feed.store/unavailable} r))]
    (is (outage/reported? e))
    (is (outage/reported? (ex-info "wrapper" {} e)) "found through the cause chain")
    (is (not (outage/reported? (ex-info "y" {:type :herald.feed.store/unavailable}))))))

(deftest answers-of-calls-from-before-a-change-do-not-flip-the-state
  (let [[r lines now] (fixture {})
        err (ex-info "redis: fetch failed" {:type :x})
        sent-while-up (outage/epoch r)]
    (outage/failed! r err (outage/epoch r))
    (is (outage/down? r))
    (outage/ok! r sent-while-up)
    (is (outage/down? r) "a call sent before the server went down and answered after is no sign it is back")
    (is (= 1 (count @lines)))
    (let [sent-while-down (outage/epoch r)]
      (swap! now + 3000)
      (outage/ok! r (outage/epoch r))
      (is (not (outage/down? r)))
      (is (= [:info "redis is back after 3.0 s down: 1 failed calls"] (peek @lines)))
      (outage/failed! r err sent-while-down)
      (is (not (outage/down? r)) "a call that waited through the outage and failed after it ended starts no new one")
      (is (= 2 (count @lines)))
      (outage/failed! r err (outage/epoch r))
      (is (outage/down? r) "a call sent after the server came back and failing is a new outage")
      (is (= [:warn "redis is down: redis: fetch failed"] (peek @lines))))))

(deftest a-quiet-back-with-an-epoch-still-starts-the-next-outage
  (let [[r lines now] (fixture {:quiet-back-ms 5000})
        err (ex-info "boom" {:type :x})]
    (outage/failed! r err (outage/epoch r))
    (swap! now + 6000)
    (outage/failed! r err (outage/epoch r))
    (is (= [[:warn "redis is down: boom"]
            [:info "redis is back after 0.0 s down (no failure for 6.0 s): 1 failed calls"]
            [:warn "redis is down: boom"]]
           @lines))))
