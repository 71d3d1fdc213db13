(ns herald.feed.link-input-test
  "Participant links in request bodies: only \"/participant/N\" (or an http(s) URL with that path) and bare ids are accepted (QA Q1); numbers no id can be (beyond 64 bits, non-finite) get a 400 naming the field, never a 500 (QA Q24)."
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
    (testing "an id written with an exponent or a fraction (7e0 reads as 7) says why it is refused"
      (let [{:keys [status json]} (post-raw (str base "/friends") (str "{\"to\":" id "e0}"))]
        (is (= 400 status))
        (is (re-find #"an id is an integer" (str (get json "error"))) (pr-str json))))
    (testing "the largest 64-bit id is still a well-formed (unknown) participant"
      (let [{:keys [status json]} (post-raw (str base "/friends") "{\"to\":9223372036854775807}")]
        (is (= 404 status))
        (is (= "to" (get json "field")))))))

(deftest only-participant-links-and-bare-ids-are-accepted
  (let [[a b] (for [n ["a" "b"]] (get-in (u/request *base* "/participant" :method :post :json {:name n}) [:json "id"]))
        friends (str "/participant/" a "/friends")
        befriend #(u/request *base* friends :method :post :json {:to %})]
    (doseq [ok [(str "/participant/" b) (str b) b (str "http://example.com/participant/" b)
                (str "https://example.com:8443/participant/" b)]]
      (testing (pr-str ok)
        (let [{:keys [status json]} (befriend ok)]
          (is (= 200 status))
          (is (= (str "/participant/" b) (get json "to"))))))
    (doseq [bad [(str "garbage/participant/" b) (str "/evil/../participant/" b) (str " /participant/" b " ")
                 (str "/participant/" b "/") (str "/x/participant/" b) (str "ftp://h/participant/" b)]]
      (testing (pr-str bad)
        (let [{:keys [status json]} (befriend bad)]
          (is (= 400 status))
          (is (= "to" (get json "field"))))))))

(deftest an-empty-cursor-is-a-400-as-an-empty-limit-is
  ;; one rule for empty paging parameters (QA Q21)
  (let [id (get-in (u/request *base* "/participant" :method :post :json {:name "c"}) [:json "id"])]
    (doseq [q ["before=" "limit=" "before=%20"]]
      (let [{:keys [status json]} (u/request *base* (str "/participant/" id "/outbound?" q))]
        (is (= 400 status) q)
        (is (= (first (.split ^String q "=")) (get json "field")) q)))
    (is (= 200 (:status (u/request *base* (str "/participant/" id "/outbound")))))
    (doseq [path ["/perf?to=" "/perf?from=" "/perf/log?to="]]
      (let [{:keys [status json]} (u/request *base* path)]
        (is (= 400 status) path)
        (is (= (if (re-find #"to=" path) "to" "from") (get json "field")) path)))))

