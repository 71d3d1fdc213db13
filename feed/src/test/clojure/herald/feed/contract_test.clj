(ns herald.feed.contract-test
  "^:integration contract tests of every endpoint over real HTTP on the embedded store: the reference formats, form-encoded and \\/-escaped bodies, paging, and every error path."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.feed :as feed]
            [herald.feed.routes :as routes]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:dynamic *sys* nil)
(def ^:dynamic *base* nil)

(use-fixtures :once
  (fn [t]
    (let [dir (u/temp-dir "herald-feed-contract")
          sys (u/start-feed! dir {:feed {:max-body-bytes 65536}})]
      (try (binding [*sys* sys *base* (feed/url sys)] (t))
           (finally (feed/stop! sys) (u/delete-tree! dir))))))

(defn- req [path & opts] (apply u/request *base* path opts))
(defn- post [path body] (req path :method :post :json body))
(defn- settle [] (is (feed/await-fanout *sys* 10000)))

(defn- search
  "The search result once it has n items (search is eventually consistent), or the last one after 5 s."
  [query n]
  (:json (u/eventually 30000 #(= n (count (:json %))) #(req (str "/outbound?keywords=" query)))))

(defn- participant! [name] (get-in (post "/participant" {:name name}) [:json "id"]))
(defn- link [id] (str "/participant/" id))

(deftest participants
  (let [{:keys [status json headers]} (post "/participant" {:name "Ann"})
        id (get json "id")]
    (is (= 200 status))
    (is (str/starts-with? (get headers "content-type") "application/json"))
    (is (= {"id" id "name" "Ann" "link" (link id)} json))
    (is (= json (:json (req (link id)))))
    (testing "form-encoded bodies"
      (let [r (req "/participant" :method :post :form {:name "Bob & Co = ☃"})]
        (is (= 200 (:status r)))
        (is (= "Bob & Co = ☃" (get-in r [:json "name"])))))
    (testing "\\/-escaped JSON and Unicode escapes"
      (let [r (req "/participant" :method :post :body "{\"name\":\"a\\/b \\u00e9\"}" :content-type "application/json")]
        (is (= 200 (:status r)))
        (is (= "a/b é" (get-in r [:json "name"])))))
    (testing "ids increase"
      (is (< id (participant! "Cy"))))))

(deftest friendships-are-symmetric-and-idempotent
  (let [a (participant! "A") b (participant! "B") c (participant! "C")
        r1 (post (str (link a) "/friends") {:from (link a) :to (link b)})
        r2 (req (str (link b) "/friends") :method :post :form {:from (link b) :to (link a)})
        r3 (post (str (link a) "/friends") {:from (link a) :to (link b)})]
    (is (= 200 (:status r1)))
    (is (= {"from" (link a) "to" (link b)} (dissoc (:json r1) "id")))
    (is (integer? (get-in r1 [:json "id"])))
    (is (= {"id" (get-in r1 [:json "id"]) "from" (link b) "to" (link a)} (:json r2)) "the same friendship from the other side")
    (is (= (:json r1) (:json r3)) "adding it again returns the existing one")
    (post (str (link a) "/friends") {:from (link a) :to (link c)})
    (is (= [{"id" (get-in r1 [:json "id"]) "from" (link b) "to" (link a)}]
           (:json (req (str (link b) "/friends")))))
    (is (= #{(link b) (link c)} (set (map #(get % "to") (:json (req (str (link a) "/friends")))))))
    (is (every? #(= (link a) (get % "from")) (:json (req (str (link a) "/friends")))))
    (is (= [] (:json (req (str (link (participant! "Loner")) "/friends")))))))

(deftest posting-fans-out-and-feeds-read-newest-first
  (let [a (participant! "Poster") b (participant! "Friend") c (participant! "Stranger")]
    (post (str (link a) "/friends") {:from (link a) :to (link b)})
    (let [item {:from (link a) :occurred "2026-11-22" :subject "first news" :story "the zebra crossing"}
          r (post (str (link a) "/outbound") item)]
      (is (= 200 (:status r)))
      (is (= {"from" (link a) "occurred" "2026-11-22" "subject" "first news" "story" "the zebra crossing"}
             (dissoc (:json r) "id" "link")))
      (is (= (str (link a) "/outbound/" (get-in r [:json "id"])) (get-in r [:json "link"])) "issue 11: id and link"))
    (let [r (req (str (link a) "/outbound") :method :post
                 :form {:from (link a) :occurred "2014-01-05T19:25:51.490Z" :subject "second" :story "a yak and a zebra"})]
      (is (= 200 (:status r)))
      (is (= "2014-01-05T19:25:51.490Z" (get-in r [:json "occurred"])) "occurred echoed as posted"))
    (settle)
    (is (= ["second" "first news"] (map #(get % "subject") (:json (req (str (link a) "/outbound"))))))
    (is (= {"from" (link a) "occurred" "2026-11-22" "subject" "first news" "story" "the zebra crossing"}
           (dissoc (second (:json (req (str (link a) "/outbound")))) "id" "link")))
    (let [inbound (:json (req (str (link b) "/inbound")))]
      (is (= ["second" "first news"] (map #(get % "subject") inbound)))
      (is (= {"from" (link a) "to" (link b) "occurred" "2026-11-22" "subject" "first news" "story" "the zebra crossing"}
             (dissoc (second inbound) "id" "link")))
      (is (= (get (second inbound) "link") (get (second (:json (req (str (link a) "/outbound")))) "link"))))
    (is (= [] (:json (req (str (link c) "/inbound")))))
    (is (= [] (:json (req (str (link a) "/inbound")))) "the sender's own inbound stays empty")
    (testing "search returns one sender link per matching post, newest first"
      (is (= [(link a) (link a)] (search "zebra" 2)))
      (is (= [(link a)] (search "yak" 1)))
      (is (= [] (:json (req "/outbound?keywords=unicorn")))))
    (testing "friends added later do not receive older posts"
      (post (str (link c) "/friends") {:from (link c) :to (link a)})
      (settle)
      (is (= [] (:json (req (str (link c) "/inbound"))))))))

(deftest unicode-text-and-search
  (let [a (participant! "Zoë")]
    (post (str (link a) "/outbound") {:from (link a) :occurred "2026-11-22" :subject "日本語" :story "Grüße aus Köln"})
    (settle)
    (is (= "Grüße aus Köln" (get-in (req (str (link a) "/outbound")) [:json 0 "story"])))
    (is (= [(link a)] (search (java.net.URLEncoder/encode "grüße" "UTF-8") 1)))))

(deftest paging-with-limit-and-cursor
  (let [a (participant! "Pager")]
    (doseq [i (range 5)]
      (post (str (link a) "/outbound") {:from (link a) :occurred "2026-11-22" :subject (str "s" i) :story "page me"}))
    (let [p1 (req (str (link a) "/outbound?limit=2"))
          next1 (second (re-find #"<([^>]+)>; rel=\"next\"" (get-in p1 [:headers "link"])))
          p2 (req next1)
          next2 (second (re-find #"<([^>]+)>; rel=\"next\"" (get-in p2 [:headers "link"])))
          p3 (req next2)]
      (is (= ["s4" "s3"] (map #(get % "subject") (:json p1))))
      (is (str/starts-with? next1 (str (link a) "/outbound?limit=2&before=")))
      (is (= ["s2" "s1"] (map #(get % "subject") (:json p2))))
      (is (= ["s0"] (map #(get % "subject") (:json p3))))
      (is (nil? (get-in p3 [:headers "link"])) "no next link on the last page"))
    (is (= 5 (count (:json (req (str (link a) "/outbound"))))) "the default page holds them all")
    (is (= 2 (count (search "page&limit=2" 2))))))

(defn- error? [{:keys [status json]} code field]
  (and (= code status) (string? (get json "error")) (or (nil? field) (= field (get json "field")))))

(deftest error-paths
  (let [a (participant! "Err")]
    (testing "400: malformed id, missing field, bad JSON, wrong types"
      (is (error? (req "/participant/abc") 400 "id"))
      (is (error? (req "/participant/-1") 400 "id"))
      (is (error? (post "/participant" {}) 400 "name"))
      (is (error? (post "/participant" {:name 5}) 400 "name"))
      (is (error? (req "/participant" :method :post :body "{\"name\": " :content-type "application/json") 400 nil))
      (is (error? (req "/participant" :method :post :body "[1,2]" :content-type "application/json") 400 "body"))
      (is (error? (req "/participant" :method :post :form {:other "x"}) 400 "name"))
      (is (error? (post (str (link a) "/friends") {:from (link a) :to (link a)}) 400 "to"))
      (is (error? (post (str (link a) "/friends") {:from (link a) :to "someone"}) 400 "to"))
      (is (error? (post (str (link a) "/friends") {:from (link a)}) 400 "to"))
      (is (error? (post (str (link a) "/outbound") {:from (link a) :occurred "yesterday" :subject "s" :story "t"}) 400 "occurred"))
      (doseq [bad ["2014-01-05T25:00:00Z" "2014-01-05T19:61" "2014-01-05T19:25:51+25:00" "2014-02-30" "2014-01-05T19"]]
        (is (error? (post (str (link a) "/outbound") {:occurred bad :subject "s" :story "t"}) 400 "occurred") bad))
      (let [c (participant! "times")]
        (doseq [ok ["2014-01-05 19:25" "2014-01-05T19:25:51,5+0200" "2014-01-05T23:59:59.999999999-05:00"]]
          (is (= ok (get-in (post (str (link c) "/outbound") {:occurred ok :subject "s" :story "t"}) [:json "occurred"])))))
      (is (error? (req "/outbound?limit=&keywords=x") 400 "limit") "an empty limit is not the default")
      (testing "messages speak JSON, not JVM (F2)"
        (doseq [[body kind] [["[1,2]" "an array"] ["\"x\"" "a string"] ["7" "a number"]]
                :let [r (req "/participant" :method :post :body body :content-type "application/json")]]
          (is (error? r 400 "body"))
          (is (= (str "the JSON body must be an object, got " kind) (get-in r [:json "error"]))))
        (let [r (req "/participant" :method :post)]
          (is (error? r 415 "Content-Type"))
          (is (str/starts-with? (get-in r [:json "error"]) "no Content-Type")))
        (is (= "'name' must be a string, got a number" (get-in (post "/participant" {:name 1}) [:json "error"])))
        (is (= {"error" "'name' must be a single value, got 1 value in an array" "field" "name" "value" [1]}
               (:json (post "/participant" {:name [1]})))))
      (testing "lone surrogates are a 400 naming the field; paired ones are fine (F15)"
        (doseq [[field body] [["name" "{\"name\":\"a\\ud800\"}"] ["name" "{\"name\":\"\\udc00b\"}"]
                              ["subject" "{\"subject\":\"\\ud83d\",\"story\":\"s\"}"]]
                :let [path (if (= "name" field) "/participant" (str (link a) "/outbound"))]]
          (is (error? (req path :method :post :body body :content-type "application/json") 400 field) body))
        (is (= "\uD83D\uDE00" (get-in (req "/participant" :method :post :body "{\"name\":\"\\ud83d\\ude00\"}"
                                             :content-type "application/json") [:json "name"]))))
      (testing "a repeated key's values come back as a JSON array (F15)"
        (is (= ["a" "b"] (get-in (req "/participant" :method :post :body "name=a&name=b"
                                      :content-type "application/x-www-form-urlencoded") [:json "value"])))
        (is (= ["1" "2"] (get-in (req (str (link a) "/inbound?limit=1&limit=2")) [:json "value"]))))
      (is (error? (req (str (link a) "/outbound?limit=")) 400 "limit"))
      (is (error? (post (str (link a) "/outbound") {:from (link a) :subject "s"}) 400 "story"))
      (is (error? (post (str (link a) "/outbound") {:from "/participant/999999" :subject "s" :story "t"}) 400 "from"))
      (is (error? (req "/outbound") 400 "keywords"))
      (is (error? (req (str (link a) "/inbound?limit=0")) 400 "limit"))
      (is (error? (req (str (link a) "/inbound?limit=many")) 400 "limit"))
      (is (error? (req (str (link a) "/inbound?before=garbage")) 400 "before")))
    (testing "404: unknown participant, unknown path"
      (is (error? (req "/participant/999999") 404 "id"))
      (is (error? (req "/participant/999999/inbound") 404 "id"))
      (is (error? (req "/participant/999999/outbound") 404 "id"))
      (is (error? (req "/participant/999999/friends") 404 "id"))
      (is (error? (post (str (link a) "/friends") {:from (link a) :to "/participant/999999"}) 404 "to"))
      (is (error? (post "/participant/999999/outbound" {:subject "s" :story "t"}) 404 "id"))
      (is (error? (req "/nowhere") 404 nil)))
    (testing "405 with Allow"
      (let [r (req "/participant" :method :delete)]
        (is (error? r 405 nil))
        (is (str/includes? (str (get-in r [:headers "allow"])) "POST"))))
    (testing "413 for an oversized body"
      (is (error? (post "/participant" {:name (apply str (repeat 70000 "x"))}) 413 "body"))
      (is (error? (req "/participant" :method :post :form {:name (apply str (repeat 70000 "x"))}) 413 nil)))
    (testing "415 for an unsupported media type"
      (is (error? (req "/participant" :method :post :body "name=x" :content-type "text/plain") 415 "Content-Type"))
      (is (error? (req "/participant" :method :post :body "name=x") 415 "Content-Type")))
    (testing "no partial state after errors"
      (is (= [] (:json (req (str (link a) "/outbound")))))
      (is (= [] (:json (req (str (link a) "/friends"))))))))

(deftest operational-endpoints
  (is (= {"status" "ok"} (:json (req "/health"))))
  (is (= 200 (:status (req "/ready"))))
  (post "/participant" {:name "metrics"})
  (let [m (req "/metrics")]
    (is (= 200 (:status m)))
    (is (str/starts-with? (get-in m [:headers "content-type"]) "text/plain"))
    (is (re-find #"(?m)^herald_feed_requests_total\{entity=\"participant\",operation=\"post\",status=\"200\"\} \d+$" (:body m)))
    (is (re-find #"(?m)^herald_feed_request_duration_seconds_bucket\{entity=\"participant\",operation=\"post\",le=\"\+Inf\"\} \d+$" (:body m)))
    ;; the fan-out and indexing of earlier tests' posts are eventually done (they run in the background)
    (is (re-find #"(?m)^herald_feed_fanout_pending 0$"
                 (:body (u/eventually 10000 #(re-find #"(?m)^herald_feed_fanout_pending 0$" (:body %)) #(req "/metrics"))))))
  (let [doc (:json (req "/openapi.json"))]
    (is (= "3.1.0" (get doc "openapi")))
    (doseq [[path ops] routes/table [method op] ops]
      (is (get-in doc ["paths" (str/replace path #":([A-Za-z]+)" "{$1}") (name method) "responses"
                       (if (contains? (:responses op) 204) "204" "200")])
          (str "documented: " method " " path))))
  (let [p (:json (req "/perf"))
        row (first (filter #(and (= "participant" (get % "entity")) (= "post" (get % "operation"))) (get p "minutes")))]
    (is (pos? (get row "count")))
    (is (every? #(contains? row %) ["minute" "median_ms" "p95_ms" "p99_ms" "max_ms" "errors" "closed"])))
  (is (error? (req "/perf?from=soon") 400 "from"))
  (let [log (req "/perf/log")]
    (is (str/starts-with? (get-in log [:headers "content-type"]) "text/plain"))
    (is (re-find #"(?m)^\d{4}\|\d{1,2}\|\d{1,2}\|\d{1,2}\|\d{1,2}\|participant\|post\|\d+$" (:body log))))
  (testing "HEAD and OPTIONS"
    (is (= 200 (:status (req "/health" :method :head))))
    (is (str/includes? (str (get-in (req "/participant" :method :options) [:headers "allow"])) "POST"))))
