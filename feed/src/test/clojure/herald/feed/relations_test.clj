(ns herald.feed.relations-test
  "^:integration the relationship operations over real HTTP (issue 11): unfriend, mutes, blocks, read-time
  filtering of inbound feeds, and the cursors of friend lists, mutes, blocks and search. Every test runs twice: on
  the embedded store, then on the :scale store with the graph on PostgreSQL and the cache on Redis (real servers;
  feeds and search in memory, local events), skipped with the reason when a server cannot start."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.feed :as feed]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.redis :as rd]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:dynamic *sys* nil)
(def ^:dynamic *base* nil)

(defn- run-on [sys t]
  (try (binding [*sys* sys *base* (feed/url sys)] (t))
       (finally (feed/stop! sys))))

(use-fixtures :once
  (fn [t]
    (let [dir (u/temp-dir "herald-feed-relations")]
      (try (run-on (u/start-feed! dir {:store {:search-max-lag-ms 0}}) t)
           (finally (u/delete-tree! dir))))
    (rd/when-up
     (pg/when-up
      (run-on (u/start-feed! nil {:store {:type :scale :graph (assoc (pg/fresh-config) :type :postgres)
                                          :cache (assoc (rd/fresh-config) :type :redis)
                                          :feeds {:type :memory} :search {:type :memory}}})
              t)))))

(defn- req [path & opts] (apply u/request *base* path opts))
(defn- post [path body] (req path :method :post :json body))
(defn- del [path] (req path :method :delete))
(defn- settle [] (is (feed/await-fanout *sys* 10000)))
(defn- link [id] (str "/participant/" id))
(defn- participant! [name] (get-in (post "/participant" {:name name}) [:json "id"]))
(defn- befriend! [a b] (is (= 200 (:status (post (str (link a) "/friends") {:to (link b)})))))
(defn- post! [a subject] (is (= 200 (:status (post (str (link a) "/outbound") {:subject subject :story (str subject " story")})))))
(defn- subjects [path] (mapv #(get % "subject") (:json (req path))))
(defn- friends-of [a] (mapv #(get % "to") (:json (req (str (link a) "/friends")))))

(defn- error? [r status field]
  (and (= status (:status r)) (string? (get-in r [:json "error"])) (= field (get-in r [:json "field"]))))

(defn- walk
  "Every item of a paged GET, following the Link rel=next headers; [items page-sizes links]."
  [path]
  (loop [path path acc [] sizes [] links []]
    (let [r (req path)
          _ (is (= 200 (:status r)) path)
          next (some->> (get-in r [:headers "link"]) (re-find #"^<([^>]+)>; rel=\"next\"$") second)
          acc (into acc (:json r))
          sizes (conj sizes (count (:json r)))]
      (if next (recur next acc sizes (conj links next)) [acc sizes links]))))

(deftest unfriend
  (let [[a b c] (repeatedly 3 #(participant! "p"))]
    (befriend! a b)
    (befriend! a c)
    (let [r (del (str (link a) "/friends/" b))]
      (is (= 204 (:status r)))
      (is (= "" (:body r))))
    (is (= [(link c)] (friends-of a)) "both sides")
    (is (= [] (friends-of b)))
    (post! a "after-unfriend")
    (settle)
    (is (= [] (subjects (str (link b) "/inbound"))) "later posts no longer fan out to the old friend")
    (is (= ["after-unfriend"] (subjects (str (link c) "/inbound"))))
    (is (= 204 (:status (del (str (link b) "/friends/" a)))) "not friends (any more): 204, idempotent")
    (testing "errors"
      (is (error? (del (str (link a) "/friends/999999")) 404 "otherId"))
      (is (error? (del (str (link 999999) "/friends/" a)) 404 "id"))
      (is (error? (del (str (link a) "/friends/" a)) 400 "otherId") "oneself")
      (is (error? (del (str (link a) "/friends/x")) 400 "otherId"))
      (is (error? (del (str "/participant/x/friends/" a)) 400 "id")))
    (befriend! b a)
    (is (= [(link b) (link c)] (friends-of a)) "befriending again works")))

(deftest mutes
  (let [[a b c] (repeatedly 3 #(participant! "p"))]
    (befriend! a b)
    (befriend! a c)
    (post! b "b1")
    (post! c "c1")
    (post! a "a1")
    (settle)
    (is (= ["c1" "b1"] (subjects (str (link a) "/inbound"))))
    (let [r (post (str (link a) "/mutes") {:target (link b)})]
      (is (= 200 (:status r)))
      (is (= {"from" (link a) "target" (link b)} (:json r))))
    (is (= ["c1"] (subjects (str (link a) "/inbound"))) "hidden at read time, also posts delivered before")
    (post! b "b2")
    (settle)
    (is (= ["c1"] (subjects (str (link a) "/inbound"))) "and posts delivered after")
    (is (= ["a1"] (subjects (str (link b) "/inbound"))) "the other direction is untouched")
    (is (= [(link b) (link c)] (friends-of a)) "the friendship is untouched")
    (is (= 200 (:status (req (str (link a) "/mutes") :method :post :form {:target b}))) "form body, bare id; idempotent")
    (is (= [{"from" (link a) "target" (link b)}] (:json (req (str (link a) "/mutes")))))
    (is (= [] (:json (req (str (link b) "/mutes")))))
    (is (= 204 (:status (del (str (link a) "/mutes/" b)))))
    (is (= ["b2" "c1" "b1"] (subjects (str (link a) "/inbound"))) "unmuted: they show again")
    (is (= [] (:json (req (str (link a) "/mutes")))))
    (is (= 204 (:status (del (str (link a) "/mutes/" b)))) "not muted: 204")
    (testing "errors"
      (is (error? (post (str (link a) "/mutes") {:target (link a)}) 400 "target") "oneself")
      (is (error? (post (str (link a) "/mutes") {}) 400 "target"))
      (is (error? (post (str (link a) "/mutes") {:target "/people/3"}) 400 "target"))
      (is (error? (post (str (link a) "/mutes") {:target [(link b) (link c)]}) 400 "target"))
      (is (error? (post (str (link a) "/mutes") {:target (link 999999)}) 404 "target"))
      (is (error? (post (str (link 999999) "/mutes") {:target (link a)}) 404 "id"))
      (is (error? (req (str (link a) "/mutes") :method :post :body "x" :content-type "text/plain") 415 "Content-Type"))
      (is (error? (req (str (link 999999) "/mutes")) 404 "id"))
      (is (error? (del (str (link a) "/mutes/" a)) 400 "otherId"))
      (is (error? (del (str (link a) "/mutes/999999")) 404 "otherId"))
      (is (error? (req (str (link a) "/mutes?limit=0")) 400 "limit"))
      (is (error? (req (str (link a) "/mutes?before=zz")) 400 "before")))))

(deftest blocks
  (let [[a b c] (repeatedly 3 #(participant! "p"))]
    (befriend! a b)
    (befriend! b c)
    (post! b "b1")
    (post! a "a1")
    (settle)
    (let [r (post (str (link a) "/blocks") {:target (link b)})]
      (is (= 200 (:status r)))
      (is (= {"from" (link a) "target" (link b)} (:json r))))
    (is (= [] (friends-of a)) "the block ends the friendship")
    (is (= [(link c)] (friends-of b)))
    (is (= [] (subjects (str (link a) "/inbound"))) "the blocked one's posts are hidden from the blocker")
    (is (= [] (subjects (str (link b) "/inbound"))) "and the blocker's from the blocked one")
    (doseq [[x y] [[a b] [b a]]]
      (let [r (post (str (link x) "/friends") {:to (link y)})]
        (is (error? r 409 "to") "befriending is a 409 both ways")
        (is (str/includes? (get-in r [:json "error"]) "blocks"))
        (is (= {"blocker" (link a) "blocked" (link b)} (get-in r [:json "value"])))))
    (is (= [] (friends-of a)) "and befriends nothing")
    (is (= [{"from" (link a) "target" (link b)}] (:json (req (str (link a) "/blocks")))))
    (is (= [] (:json (req (str (link b) "/blocks")))) "directed")
    (is (= 204 (:status (del (str (link a) "/blocks/" b)))))
    (is (= ["b1"] (subjects (str (link a) "/inbound"))) "unblocked: posts delivered before show again")
    (is (= ["a1"] (subjects (str (link b) "/inbound"))))
    (is (= [] (friends-of a)) "the friendship is not restored")
    (befriend! a b)
    (is (= 204 (:status (del (str (link a) "/blocks/" b)))) "not blocked: 204")
    (testing "errors"
      (is (error? (post (str (link a) "/blocks") {:target a}) 400 "target") "oneself")
      (is (error? (post (str (link a) "/blocks") {:target (link 999999)}) 404 "target"))
      (is (error? (post (str (link 999999) "/blocks") {:target (link a)}) 404 "id"))
      (is (error? (del (str (link a) "/blocks/999999")) 404 "otherId"))
      (is (error? (del (str (link a) "/blocks/" a)) 400 "otherId"))
      (is (error? (req (str (link 999999) "/blocks")) 404 "id")))))

(deftest filtered-pages-stay-full
  (let [[a b c] (repeatedly 3 #(participant! "p"))]
    (befriend! a b)
    (befriend! a c)
    (doseq [i (range 6)] (post! b (str "b" i)) (post! c (str "c" i)) (post! b (str "bb" i)))
    (settle)
    (post (str (link a) "/mutes") {:target (link b)})
    (doseq [n [1 2 4 5 6 7]]
      (let [[items sizes] (walk (str (link a) "/inbound?limit=" n))]
        (is (= (mapv #(str "c" %) (range 5 -1 -1)) (mapv #(get % "subject") items)) (str "limit " n))
        (is (every? #(= n %) (butlast sizes)) (str "full pages of " n " while visible items remain"))
        (is (= (max 1 (long (Math/ceil (/ 6.0 n)))) (count sizes)) (str "no empty trailing page at limit " n))))
    (testing "a page whose items are all hidden is not answered: it reads on"
      (post (str (link a) "/mutes") {:target (link c)})
      (is (= [[] [0] []] (walk (str (link a) "/inbound?limit=2")))))))

(deftest lists-and-search-have-cursors
  (let [[a & others] (repeatedly 6 #(participant! "p"))
        word (str "kestrel" (System/nanoTime))]
    (doseq [o others] (befriend! a o))
    (let [[items sizes links] (walk (str (link a) "/friends?limit=2"))]
      (is (= (mapv link others) (mapv #(get % "to") items)) "friends, ascending, each once")
      (is (= [2 2 1] sizes))
      (is (every? #(str/starts-with? % (str (link a) "/friends?limit=2&before=")) links)))
    (is (= 5 (count (:json (req (str (link a) "/friends"))))) "without limit: the feeds' default page (50)")
    (doseq [o others] (post (str (link a) "/mutes") {:target o}) (post (str (link a) "/blocks") {:target o}))
    (is (= (mapv link others) (mapv #(get % "target") (first (walk (str (link a) "/mutes?limit=3"))))))
    (is (= (mapv link others) (mapv #(get % "target") (first (walk (str (link a) "/blocks?limit=4"))))))
    (doseq [i (range 5)] (post (str (link (nth others i)) "/outbound") {:subject word :story "x"}))
    (settle)
    (let [[items sizes links] (walk (str "/outbound?keywords=" word "&limit=2"))]
      (is (= (mapv link (reverse others)) items) "newest first, each post once")
      (is (= [2 2 1] sizes))
      (is (every? #(str/starts-with? % (str "/outbound?keywords=" word "&limit=2&before=")) links)))
    (is (= (mapv link (reverse others)) (:json (req (str "/outbound?keywords=" word)))) "no limit: one page, no Link")
    (is (nil? (get-in (req (str "/outbound?keywords=" word)) [:headers "link"])))
    (is (error? (req (str "/outbound?keywords=" word "&before=nope")) 400 "before"))
    (is (error? (req (str (link a) "/friends?before=")) 400 "before"))))

(deftest openapi-describes-the-relationships
  (let [paths (get-in (req "/openapi.json") [:json "paths"])]
    (is (= #{"delete"} (set (keys (get paths "/participant/{id}/friends/{otherId}")))))
    (is (= #{"get" "post"} (set (keys (get paths "/participant/{id}/mutes")))))
    (is (= #{"get" "post"} (set (keys (get paths "/participant/{id}/blocks")))))
    (is (contains? (get-in paths ["/participant/{id}/blocks/{otherId}" "delete" "responses"]) "204"))
    (is (contains? (get-in paths ["/participant/{id}/friends" "post" "responses"]) "409"))))
