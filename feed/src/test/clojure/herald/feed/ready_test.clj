(ns herald.feed.ready-test
  "GET /ready's handler asks the store's readiness once per probe (it asked twice: once for the status, once for
  the body's `store`), and answers the same as before: 200 ready, 503 while draining or with the store not ready."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.routes :as routes]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.json :as json])
  (:import (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(set! *warn-on-reflection* true)

(deftest ready-asks-the-store-once-per-probe
  (let [asked (AtomicLong.)
        up (AtomicBoolean. true)
        store (reify lifecycle/Lifecycle
                (-ready? [_] (.incrementAndGet asked) (.get up))
                (-close! [_] nil)
                (-stats [_] {}))
        draining? (atom false)
        probe (fn []
                (let [r (#'routes/ready {:store store :draining? draining?} {})]
                  [(:status r) (json/read (String. ^bytes (:body r) "UTF-8") {:keywords? false})]))]
    (is (= [200 {"status" "ready" "store" "open" "draining" false}] (probe)))
    (is (= 1 (.get asked)))
    (reset! draining? true)
    (is (= [503 {"status" "unavailable" "store" "open" "draining" true}] (probe)))
    (is (= 2 (.get asked)))
    (reset! draining? false)
    (.set up false)
    (is (= [503 {"status" "unavailable" "store" "closed" "draining" false}] (probe)))
    (is (= 3 (.get asked)) "one question per probe")))
