(ns herald.feed.number-input-test
  "JSON numbers no participant id can be: integers beyond 64 bits and non-finite doubles get a 400 naming the field, never a 500 (QA Q24)."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:dynamic *base* nil)

(use-fixtures :once
  (fn [t]
    (let [sys (u/start-feed! nil)]
      (try (binding [*base* (feed/url sys)] (t))
           (finally (feed/stop! sys))))))

(defn- post-raw [path ^String body]
  (u/request *base* path :method :post :body body :content-type "application/json"))

(deftest out-of-range-ids-are-400s-naming-the-field
  (let [id (get-in (u/request *base* "/participant" :method :post :json {:name "n"}) [:json "id"])
        base (str "/participant/" id)]
    (doseq [[path body field] [[(str base "/outbound") "{\"from\":9223372036854775808,\"subject\":\"s\",\"story\":\"t\"}" "from"]
                               [(str base "/friends") "{\"to\":77827069270112226229408753516544}" "to"]
                               [(str base "/outbound") "{\"from\":1e400,\"subject\":\"s\",\"story\":\"t\"}" "from"]
                               [(str base "/friends") "{\"to\":[1e400]}" "to"]
                               [(str base "/friends") "{\"to\":-1e400}" "to"]]]
      (testing body
        (let [{:keys [status json]} (post-raw path body)]
          (is (= 400 status))
          (is (= field (get json "field")))
          (is (string? (get json "error"))))))
    (testing "the largest 64-bit id is still a well-formed (unknown) participant"
      (let [{:keys [status json]} (post-raw (str base "/friends") "{\"to\":9223372036854775807}")]
        (is (= 404 status))
        (is (= "to" (get json "field")))))))
