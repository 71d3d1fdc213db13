(ns herald.feed.errors-test
  "Error bodies: client errors name the field; a storage outage is a 503 that does not show the backend's internals."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.errors :as err]
            [herald.http :as http]))

(set! *warn-on-reflection* true)

(defn- body [r] (http/read-json (String. ^bytes (:body r) "UTF-8")))

(deftest a-storage-outage-is-a-503-without-internals
  ;; external QA (session 3, Q12): a Redis timeout used to answer its host, key layout and exception class
  (let [e (ex-info "redis: invalidating [:friends 446] failed: java.net.SocketTimeoutException: Read timed out"
                   {:type :herald.feed.store/unavailable})
        r (err/ex->response e)]
    (is (= 503 (:status r)))
    (is (= "1" (get-in r [:headers "retry-after"])))
    (is (= {"error" "storage temporarily unavailable: retry the request"} (body r)))
    (is (not (re-find #"redis|Socket|friends" (String. ^bytes (:body r) "UTF-8"))))))

(deftest client-errors-keep-their-message-and-field
  (let [r (err/ex->response (ex-info "'to' must be a participant link" {:type :herald.feed/bad-request :field "to" :value "x"}))]
    (is (= 400 (:status r)))
    (is (= {"error" "'to' must be a participant link" "field" "to" "value" "x"} (body r)))))
