(ns herald.feed.load-mix-test
  "^:integration herald-load's feed workload with shares of edits, deletes and single-post reads (issue 11) against
  a real feed started in this JVM (memory and embedded stores, and memory with auth on and the load's tokens): the
  feed's own /perf counts the same PATCH, DELETE and GET-one requests as the load with no error, deleted posts are
  gone from every outbound and inbound feed, and edited subjects show."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.auth.jwt :as jwt]
            [herald.feed.test-util :as u]
            [herald.json :as json]
            [herald.load :as load])
  (:import (java.net URI)
           (java.net.http HttpRequest HttpResponse HttpResponse$BodyHandlers)))

(set! *warn-on-reflection* true)

(def ^:private mix
  "A short broadcaster-only run with every share non-zero."
  {:users 3 :search-share 0.0 :reader-share 0.0 :duration 3 :batch-size 4 :min-friends 1 :max-friends 2
   :posts-per-user 6 :subject-words 3 :story-words 10 :edit-share 0.2 :delete-share 0.15 :read-post-share 0.15
   :seed 7 :progress :quiet})

(defn- server-counts
  "Per \"entity operation\" of the feed's /perf: [count errors] summed over the minutes."
  [base]
  (reduce (fn [m row] (update m (str (get row "entity") " " (get row "operation"))
                              (fn [[c e]] [(+ (long (or c 0)) (long (get row "count")))
                                           (+ (long (or e 0)) (long (get row "errors" 0)))])))
          {} (get-in (u/request base "/perf") [:json "minutes"])))

(defn- get-json
  "[status parsed-body] of a GET, with participant `id`'s bearer token when `secret` is given (auth on)."
  [base path secret id]
  (let [b (cond-> (HttpRequest/newBuilder (URI/create (str base path)))
            secret (.header "Authorization" (str "Bearer " (jwt/mint secret id 600))))
        ^HttpResponse r (.send u/client (.build b) (HttpResponse$BodyHandlers/ofString))]
    [(.statusCode r) (when (= 200 (.statusCode r)) (json/read (str (.body r)) {:keywords? false}))]))

(defn- items
  "Every item of the feed `kind` (\"outbound\" or \"inbound\") of participants 1..n (the stores number them from
  1); a GET that does not answer 200 fails the test."
  [base n kind secret]
  (let [rs (mapv #(get-json base (str "/participant/" % "/" kind "?limit=1000") secret %) (range 1 (inc (long n))))]
    (is (= #{200} (set (map first rs))) kind)
    (into [] (mapcat second) rs)))

(defn- check-mix [sys extra]
  (let [base (feed/url sys)
        port (Long/parseLong (re-find #"\d+$" base))
        r (load/feed (merge mix {:port port} extra))
        n #(get-in r [:operations % :latency :count] 0)
        [posts patches deletes reads participants] (map n ["outbound post" "outbound patch" "outbound delete"
                                                           "outbound get-one" "participant post"])]
    (testing "the load: every share happened, no request failed, a DELETE is a 204"
      (is (every? pos? [posts patches deletes reads]) (pr-str (keys (:operations r))))
      (is (every? zero? (vals (:errors r))) (pr-str (:errors r)))
      (is (= #{200 204} (set (keys (:status r)))) (pr-str (:status r)))
      (is (= deletes (get-in r [:operations "outbound delete" :status 204]))))
    (testing "the feed's own /perf counts the same requests, without errors"
      (let [srv (server-counts base)]
        (doseq [[k c] [["outbound post" posts] ["outbound patch" patches] ["outbound delete" deletes]
                       ["outbound get-one" reads]]]
          (is (= [c 0] (srv k)) k))
        (is (every? zero? (map second (vals srv))) (pr-str srv))))
    (is (feed/await-fanout sys 10000))
    (let [out (items base participants "outbound" (:jwt-secret extra))
          links (set (map #(get % "link") out))
          edited (filter #(str/ends-with? (str (get % "subject")) "(edited)") out)]
      (testing "deleted posts are gone from the outbound feeds"
        (is (= (- posts deletes) (count out)))
        (is (= (count out) (count links)) "no post twice"))
      (testing "edited subjects show (a post may be edited twice, or deleted after its edit)"
        (is (<= 1 (count edited) patches) (str (count edited) " edited of " patches " edits")))
      (testing "inbound copies: none of a deleted post, edited ones as their outbound item"
        (let [by-link (into {} (map (juxt #(get % "link") identity)) out)
              in (u/eventually 30000 #(every? (comp links (fn [i] (get i "link"))) %)
                               #(items base participants "inbound" (:jwt-secret extra)))]
          (is (seq in))
          (is (every? #(contains? links (get % "link")) in) "a deleted post's copy remains")
          (is (every? #(= (get-in by-link [(get % "link") "subject"]) (get % "subject")) in)
              "an inbound copy shows the old subject"))))))

(def ^:private secret "load-mix-test-secret-of-at-least-32-bytes!")

(deftest ^:integration herald-load-edits-deletes-and-reads-posts-of-a-real-feed
  (doseq [[label dir overrides extra] [["memory" nil {} {}]
                                       ["embedded" (u/temp-dir "herald-load-mix") {:store {:search-max-lag-ms 0}} {}]
                                       ["memory, auth on: the sender's token on PATCH and DELETE" nil
                                        {:auth {:enabled? true :hs256-secret secret}} {:jwt-secret secret}]]]
    (testing label
      (let [sys (u/start-feed! dir overrides)]
        (try (check-mix sys extra)
             (finally (feed/stop! sys)
                      (when dir (u/delete-tree! dir))))))))
