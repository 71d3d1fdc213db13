(ns herald.feed.idempotency-test
  "Issue 10: `Idempotency-Key` on POST /participant/{id}/outbound over HTTP, on the local log: a repeat answers the
  first post and records none (outbound, a friend's inbound, search), JSON and form bodies alike; other fields are a
  422, a bad key a 400; concurrent repeats make one post; the embedded store killed with SIGKILL between two
  attempts still dedupes; expired keys name nothing."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.crash-test]
            [herald.feed.store.keys :as keys]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.net URI)
           (java.net.http HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)
           (java.time Duration)))

(set! *warn-on-reflection* true)

(defn post!
  "POSTs `body` (a map: JSON, or form-encoded when `form?`) to `base` + `path` with the Idempotency-Key `k` (none
  when nil); returns {:status :json}."
  ([base path body k] (post! base path body k false))
  ([base path body k form?]
   (let [b (cond-> (-> (HttpRequest/newBuilder (URI/create (str base path)))
                       (.timeout (Duration/ofSeconds 30))
                       (.header "Content-Type" (if form? "application/x-www-form-urlencoded" "application/json"))
                       (.POST (HttpRequest$BodyPublishers/ofString (if form? (u/form-encode body) (json/write-str body)))))
             k (.header "Idempotency-Key" ^String k))
         ^HttpResponse r (.send u/client (.build b) (HttpResponse$BodyHandlers/ofString))]
     {:status (.statusCode r) :json (json/read (str (.body r)) {:keywords? false})})))

(defn link [id] (str "/participant/" id))

(defn setup!
  "Participants Ann and Bob, friends, on the feed at `base`: [ann bob]."
  [base]
  (let [id #(get-in (u/request base "/participant" :method :post :json {:name %}) [:json "id"])
        a (id "Ann") b (id "Bob")]
    (u/request base (str (link a) "/friends") :method :post :json {:to (link b)})
    [a b]))

(defn copies
  "How many copies of the post with `subject` the author `a`'s outbound, friend `b`'s inbound and search hold
  (after the fan-out), as {:outbound n :inbound n :search n}; search by the one word `word` of its story."
  [sys a b subject word]
  (is (true? (feed/await-fanout sys 60000)))
  (let [base (feed/url sys)
        n (fn [path] (count (filter #(= subject (get % "subject")) (:json (u/request base (str path "?limit=1000"))))))]
    {:outbound (n (str (link a) "/outbound")) :inbound (n (str (link b) "/inbound"))
     :search (count (:json (u/request base (str "/outbound?keywords=" word "&limit=1000"))))}))

(defn- error? [{:keys [status json]} code]
  (and (= code status) (= "Idempotency-Key" (get json "field")) (string? (get json "error"))))

(deftest repeats-answer-the-first-post
  (let [sys (u/start-feed! nil)
        base (feed/url sys)
        [a b] (setup! base)
        path (str (link a) "/outbound")
        body {:subject "once" :story "idempotent zebra" :occurred "2026-11-26"}]
    (try
      (let [first-answer (post! base path body "k-1")]
        (is (= 200 (:status first-answer)))
        (is (= (str path "/" (get-in first-answer [:json "id"])) (get-in first-answer [:json "link"])))
        (testing "the same key and fields, as JSON or as a form: the same answer"
          (is (= first-answer (post! base path body "k-1")))
          (is (= first-answer (post! base path body "k-1" true))))
        (testing "the same key with other fields: 422 naming the header, nothing recorded"
          (let [r (post! base path (assoc body :story "idempotent other") "k-1")]
            (is (error? r 422) (pr-str r))))
        (is (= {:outbound 1 :inbound 1 :search 1} (copies sys a b "once" "zebra")))
        (testing "the key is the participant's: Bob's k-1 is a post of his own"
          (let [r (post! base (str (link b) "/outbound") body "k-1")]
            (is (= 200 (:status r)))
            (is (not= (get-in r [:json "id"]) (get-in first-answer [:json "id"])))))
        (testing "without the header, two requests are two posts, as before"
          (is (= 200 (:status (post! base path (assoc body :subject "twice") nil))))
          (is (= 200 (:status (post! base path (assoc body :subject "twice") nil))))
          (is (= 2 (:outbound (copies sys a b "twice" "zebra")))))
        (testing "a bad key is a 400 naming the header, and records nothing"
          (doseq [k ["" "two words" (apply str (repeat 256 "x")) "tab\there" "k-1,k-2"]]
            (is (error? (post! base path (assoc body :subject "bad") k) 400) (pr-str k)))
          (testing "the header twice (Ring joins the values with a comma) is a 400, not a third key"
            (let [^HttpResponse r (.send u/client
                                         (-> (HttpRequest/newBuilder (URI/create (str base path)))
                                             (.header "Content-Type" "application/json")
                                             (.header "Idempotency-Key" "k-1") (.header "Idempotency-Key" "k-2")
                                             (.POST (HttpRequest$BodyPublishers/ofString (json/write-str (assoc body :subject "bad"))))
                                             (.build))
                                         (HttpResponse$BodyHandlers/ofString))]
              (is (error? {:status (.statusCode r) :json (json/read (str (.body r)) {:keywords? false})} 400)
                  (str (.body r)))))
          (is (= 255 (count (apply str (repeat 255 "x")))))
          (is (= 200 (:status (post! base path (assoc body :subject "long") (apply str (repeat 255 "x"))))) "255 is fine")
          (is (= 0 (:outbound (copies sys a b "bad" "zebra"))))))
      (finally (feed/stop! sys)))))

(deftest concurrent-repeats-make-one-post
  (let [sys (u/start-feed! nil)
        base (feed/url sys)
        [a b] (setup! base)
        answers (->> (range 16)
                     (mapv (fn [_] (future (post! base (str (link a) "/outbound") {:subject "race" :story "racing yak"} "same"))))
                     (mapv deref))]
    (try
      (is (every? #(= 200 (:status %)) answers))
      (is (= 1 (count (set (map #(get-in % [:json "id"]) answers)))) "every answer is the one post")
      (is (= {:outbound 1 :inbound 1 :search 1} (copies sys a b "race" "yak")))
      (finally (feed/stop! sys)))))

(deftest expired-keys-name-nothing
  (let [sys (u/start-feed! nil {:feed {:idempotency-key-ttl-ms 200}})
        base (feed/url sys)
        [a b] (setup! base)
        path (str (link a) "/outbound")
        r1 (post! base path {:subject "ttl" :story "expiring gnu"} "k")]
    (try
      (is (= r1 (post! base path {:subject "ttl" :story "expiring gnu"} "k")) "alive: the same post")
      (Thread/sleep 300)
      (let [r2 (post! base path {:subject "ttl" :story "expiring gnu"} "k")]
        (is (= 200 (:status r2)))
        (is (not= (get-in r1 [:json "id"]) (get-in r2 [:json "id"])) "expired: the key names a new post"))
      (is (= 2 (:outbound (copies sys a b "ttl" "gnu"))))
      (testing "purged: a purge deletes the expired records, a second finds none"
        (let [st (:store (feed/service sys)) later (+ (System/currentTimeMillis) 1000)]
          (is (<= 1 (keys/purge-keys! st later)))
          (is (= 0 (keys/purge-keys! st later)))))
      (finally (feed/stop! sys)))))

(deftest ^:integration the-embedded-store-dedupes-across-a-sigkill
  (let [dir (u/temp-dir "feed-idem-")
        child (#'herald.feed.crash-test/start-child dir)
        [a b] (setup! (:base child))
        body {:subject "durable" :story "sigkilled okapi"}
        r1 (post! (:base child) (str (link a) "/outbound") body "k-kill")]
    (.destroyForcibly ^Process (:process child))
    (.waitFor ^Process (:process child))
    (is (= 200 (:status r1)))
    (let [sys (u/start-feed! dir)]
      (try
        (is (= r1 (post! (feed/url sys) (str (link a) "/outbound") body "k-kill")) "after the restart: the same post")
        (is (error? (post! (feed/url sys) (str (link a) "/outbound") (assoc body :story "other") "k-kill") 422))
        (is (= {:outbound 1 :inbound 1 :search 1} (copies sys a b "durable" "okapi")))
        (finally (feed/stop! sys) (u/delete-tree! dir))))))

(deftest the-openapi-document-names-the-header
  (let [sys (u/start-feed! nil)]
    (try
      (let [op (get-in (:json (u/request (feed/url sys) "/openapi.json")) ["paths" "/participant/{id}/outbound" "post"])]
        (is (= [{"in" "header" "name" "Idempotency-Key" "required" false}]
               (->> (get op "parameters") (filter #(= "Idempotency-Key" (get % "name"))) (map #(select-keys % ["in" "name" "required"])))))
        (is (every? #(contains? (get op "responses") %) ["400" "422" "501" "503"])))
      (finally (feed/stop! sys)))))
