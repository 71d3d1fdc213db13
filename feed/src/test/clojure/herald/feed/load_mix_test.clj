(ns herald.feed.load-mix-test
  "^:integration herald-load's feed workload with shares of edits, deletes and single-post reads (issue 11) against
  a real feed started in this JVM (memory and embedded stores): the feed's own /perf counts the same PATCH, DELETE
  and GET-one requests as the load with no error, deleted posts are gone from every outbound and inbound feed, and
  edited subjects show."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]
            [herald.load :as load]))

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

(defn- items
  "Every item of the feed `kind` (\"outbound\" or \"inbound\") of participants 1..n (the stores number them from
  1); a GET that does not answer 200 fails the test."
  [base n kind]
  (let [rs (mapv #(u/request base (str "/participant/" % "/" kind "?limit=1000")) (range 1 (inc (long n))))]
    (is (every? #(= 200 (:status %)) rs) (pr-str (first (remove #(= 200 (:status %)) rs))))
    (into [] (mapcat :json) rs)))

(defn- check-mix [sys]
  (let [base (feed/url sys)
        port (Long/parseLong (re-find #"\d+$" base))
        r (load/feed (assoc mix :port port))
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
    (let [out (items base participants "outbound")
          links (set (map #(get % "link") out))
          edited (filter #(str/ends-with? (str (get % "subject")) "(edited)") out)]
      (testing "deleted posts are gone from the outbound feeds"
        (is (= (- posts deletes) (count out)))
        (is (= (count out) (count links)) "no post twice"))
      (testing "edited subjects show (a post may be edited twice, or deleted after its edit)"
        (is (<= 1 (count edited) patches) (str (count edited) " edited of " patches " edits")))
      (testing "inbound copies: none of a deleted post, edited ones as their outbound item"
        (let [by-link (into {} (map (juxt #(get % "link") identity)) out)
              in (u/eventually 5000 #(every? (comp links (fn [i] (get i "link"))) %)
                               #(items base participants "inbound"))]
          (is (seq in))
          (is (every? #(contains? links (get % "link")) in) "a deleted post's copy remains")
          (is (every? #(= (get-in by-link [(get % "link") "subject"]) (get % "subject")) in)
              "an inbound copy shows the old subject"))))))

(deftest ^:integration herald-load-edits-deletes-and-reads-posts-of-a-real-feed
  (doseq [dir [nil (u/temp-dir "herald-load-mix")]]
    (testing (if dir "embedded" "memory")
      (let [sys (u/start-feed! dir (if dir {:store {:search-max-lag-ms 0}} {}))]
        (try (check-mix sys)
             (finally (feed/stop! sys)
                      (when dir (u/delete-tree! dir))))))))
