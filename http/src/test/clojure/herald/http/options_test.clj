(ns herald.http.options-test
  "start-server's options: every key validated, errors naming the key."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.impl.options :as options]
            [herald.http.test-support :as ts :refer [with-server]]))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- error-of [opts]
  (try (http/start-server (fn [_] {:status 200}) opts) nil
       (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest invalid-options-name-the-key
  (doseq [[k v] {:port 70000 :host 1 :mode :fibers :async? "yes" :worker-threads 0 :max-pending -1
                 :max-body-bytes -5 :max-header-bytes 10 :max-request-line-bytes 1 :idle-timeout-ms -1
                 :request-timeout-ms 1.5 :max-connections 0 :shutdown-timeout-ms "10" :io-threads 0
                 :transport :bsd :server-header "a\r\nb" :proxy? 1 :error-logger "log"
                 :websocket-max-frame-bytes 10 :max-pipelined 0 :no-such-option true}]
    (testing (str k)
      (is (= {:type :herald.http/invalid-option :key k :value v} (error-of {k v}))))))

(deftest non-map-options-and-handlers-are-refused
  (is (= :herald.http/invalid-option (:type (error-of [:port 1]))))
  (is (= :handler (:key (try (http/start-server "not a fn" {}) (catch clojure.lang.ExceptionInfo e (ex-data e)))))))

(deftest every-documented-option-is-known
  (let [doc (:doc (meta #'http/start-server))]
    (doseq [k (keys options/specs)]
      (is (re-find (re-pattern (java.util.regex.Pattern/quote (str "`" k "`"))) doc) (str k " documented in start-server's docstring")))))

(deftest ^:integration valid-options-start-a-server
  (with-server [s (fn [_] {:status 200 :body "ok"})
                {:mode :worker-pool :worker-threads 2 :max-pending 10 :max-body-bytes 10 :max-header-bytes 4096
                 :max-request-line-bytes 1024 :idle-timeout-ms 1000 :request-timeout-ms 1000 :max-connections 5
                 :shutdown-timeout-ms 100 :io-threads 1 :transport :nio :server-header nil :proxy? true
                 :error-logger (fn [_ _]) :websocket-max-frame-bytes 1000 :max-pipelined 2 :async? false}]
    (let [r (ts/GET (ts/port s) "/")]
      (is (= "ok" (:body r)))
      (is (nil? ((:headers r) "server")) ":server-header nil sends none"))))
