(ns herald.feed.errors-test
  "Error bodies: client errors name the field; a storage outage is a 503 that does not show the backend's internals."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.errors :as err]
            [herald.feed.handlers :as h]
            [herald.json :as json]))

(set! *warn-on-reflection* true)

(defn- body [r] (json/read (String. ^bytes (:body r) "UTF-8")))

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

(deftest a-store-check-failing-is-a-500-not-a-client-error
  ;; the service boundary validates every request first: a store's own check failing is a bug, and its message (the
  ;; store's vocabulary: :sender, :limit 1..10000, the cursor's encoding) never reaches a client
  (doseq [e [(ex-info ":sender must be a positive long id, got -1" {:type :herald.feed.store/invalid :key :sender :value -1})
             (ex-info "malformed cursor \"x\"" {:type :herald.feed.store/bad-cursor :key :before :value "x"})]]
    (is (nil? (err/ex->response e)) (ex-message e))
    (let [r ((h/endpoint nil nil nil (fn [_] (throw e))) {:request-method :get :uri "/participant/1/outbound"})]
      (is (= 500 (:status r)))
      (is (= {"error" "internal server error"} (body r))))))

(deftest a-backend-outage-type-is-a-503
  (doseq [t [:herald.feed.store.opensearch/unavailable :herald.feed.store.cassandra/unavailable
             :herald.feed.store.cassandra/timeout]]
    (is (= 503 (:status (err/ex->response (ex-info "down" {:type t})))) (str t))))
