(ns herald.load.sweep-test
  "The wall search: step verdicts and a short sweep against a server that slows down past a rate."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.load :as load]
            [herald.load.impl.plot :as plot]
            [herald.load.impl.report :as report]
            [herald.load.impl.sweep :as sweep]
            [herald.load.test-server :as ts]))

(set! *warn-on-reflection* true)

(deftest step-verdicts
  (let [r {:rate {:target 100.0 :achieved 99.5} :latency {:p99 4.0 :p999 8.0} :errors {:connect 0 :status 0}}]
    (is (sweep/step-ok? r 5 10))
    (is (not (sweep/step-ok? r 3 10)) "p99 over the bound")
    (is (not (sweep/step-ok? r 5 7)) "p99.9 over the bound")
    (is (not (sweep/step-ok? (assoc-in r [:rate :achieved] 90.0) 5 10)) "rate not achieved")
    (is (not (sweep/step-ok? (assoc-in r [:errors :status] 1) 5 10)) "errors")
    (is (= 300 (sweep/wall [{:rate 100 :ok? true} {:rate 300 :ok? true} {:rate 400 :ok? false}])))
    (is (nil? (sweep/wall [{:rate 100 :ok? false}])))))

(deftest the-wall-is-below-the-first-failing-step
  (let [steps [{:rate 1561 :ok? false} {:rate 3901 :ok? true} {:rate 7803 :ok? true} {:rate 9363 :ok? false}
               {:rate 10924 :ok? true} {:rate 12484 :ok? true} {:rate 14045 :ok? false}]]
    (is (nil? (sweep/wall steps)) "the first step failed: no rate is known to pass with every lower one")
    (is (= 7803 (sweep/wall (rest steps))))
    (is (= 12484 (sweep/highest-passed steps)))
    (is (re-find #"NON-MONOTONE: 2 step\(s\) below 12484/s failed" (sweep/non-monotone-warning steps)))
    (is (nil? (sweep/non-monotone-warning [{:rate 1 :ok? true} {:rate 2 :ok? false}])))))

(deftest ^:integration sweep-finds-the-wall-of-a-one-thread-server
  ;; one server thread taking 10 ms per request saturates at 100 requests/s: 50/s passes, 200/s cannot.
  ;; The rates are steps of one run on the same connections, stopped after two failing steps in a row.
  (ts/when-calm
  (let [peers (java.util.concurrent.ConcurrentHashMap.)]
  (ts/with-server [s (fn [^com.sun.net.httpserver.HttpExchange ex]
                       (.put peers (str (.getRemoteAddress ex)) true)
                       (Thread/sleep 10) (ts/respond! ex 200 "ok")) 1]
    (let [steps (atom [])
          r (load/sweep {:url (:url s) :rates [20 50 200 400 800] :duration 1.5 :warmup 0.5 :connections 8 :p99-bound 200
                         :progress :quiet :on-step #(swap! steps conj %)})]
      (is (= [20 50 200 400] (map :rate (:steps r))) "stops after two failing steps in a row")
      (is (= [true true false false] (map :ok? (:steps r))))
      (is (= 50 (:wall r)))
      (is (= 4 (count @steps) (count (:runs r))))
      (is (= (map (juxt :rate :ok?) (:steps r)) (map (juxt :rate :ok?) @steps)) "the live verdicts are the final ones")
      (is (= [20 50 200 400 800] (map #(get-in % [:target :rate]) (:steps (:run r)))) "one run with every rate as a step")
      (is (not (:complete? (last (:steps (:run r))))) "the run stopped during the 800/s step")
      (is (<= (count peers) 8) "every step ran on the same 8 connections")
      (is (re-find #"<svg .*p99 bound" (str/replace (plot/svg (report/sweep-chart r)) "\n" " "))))))))
