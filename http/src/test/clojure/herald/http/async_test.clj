(ns herald.http.async-test
  "Ring 3-arity async handlers: any-thread respond, raise, sync throws, double respond, every mode."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http.test-support :as ts :refer [with-server]]))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- handler [req respond raise]
  (case (:uri req)
    "/now" (respond {:status 200 :body "now"})
    "/thread" (.start (Thread. ^Runnable (fn [] (Thread/sleep 10) (respond {:status 201 :body "thread"}))))
    "/stream" (future (respond {:status 200 :body (map str ["s" "t" "r"])}))
    "/raise-non-throwable" (raise "not a throwable")
    "/nil" (respond nil)
    (raise (ex-info "unknown" {}))))

(deftest ^:integration async-in-every-mode
  (doseq [mode [:virtual-threads :worker-pool :event-loop]]
    (testing (str mode)
      (with-server [s handler {:async? true :mode mode :error-logger (fn [_ _])}]
        (let [p (ts/port s)]
          (is (= "now" (:body (ts/GET p "/now"))))
          (is (= 201 (:status (ts/GET p "/thread"))))
          (is (= "str" (:body (ts/GET p "/stream"))))
          (is (= 500 (:status (ts/GET p "/raise-non-throwable"))))
          (is (= 500 (:status (ts/GET p "/nil"))))
          (is (= 500 (:status (ts/GET p "/other")))))))))

(deftest ^:integration async-responses-keep-pipelined-order
  (with-server [s (fn [req respond _]
                    (let [ms (- 50 (* 3 (Long/parseLong (subs (:uri req) 1))))]
                      (future (Thread/sleep ms) (respond {:status 200 :body (:uri req)}))))
                {:async? true}]
    (let [c (ts/open (ts/port s))]
      (try (ts/write! c (apply str (for [i (range 16)] (ts/request-text "GET" (str "/" i)))))
           (is (= (map #(str "/" %) (range 16)) (for [_ (range 16)] (:body (ts/read-response c)))))
           (finally (ts/close! c))))))
