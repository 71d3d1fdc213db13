(ns herald.feed.posts-test
  "^:integration posts as resources over real HTTP (issue 11), on the embedded store and on the memory store: every
  post item has its id and link; GET, PATCH and DELETE of the link; inbound copies and search follow edits and
  deletes; every error path answers a JSON 4xx naming the field; an edit or delete survives a restart."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.auth.jwt :as jwt]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)))

(set! *warn-on-reflection* true)

(def ^:dynamic *sys* nil)
(def ^:dynamic *base* nil)

(defn- with-feed [dir f]
  (let [sys (u/start-feed! dir {:store (if dir {:search-max-lag-ms 0} {})})]
    (try (binding [*sys* sys *base* (feed/url sys)] (f))
         (finally (feed/stop! sys)))))

(defn- each-profile
  "Runs (f) on a fresh embedded store and on a fresh memory store."
  [f]
  (let [dir (u/temp-dir "herald-feed-posts")]
    (try (testing "embedded" (with-feed dir f))
         (finally (u/delete-tree! dir))))
  (testing "memory" (with-feed nil f)))

(defn- req [path & opts] (apply u/request *base* path opts))
(defn- post [path body] (req path :method :post :json body))
(defn- settle [] (is (feed/await-fanout *sys* 10000)))
(defn- participant! [name] (get-in (post "/participant" {:name name}) [:json "id"]))
(defn- link [id] (str "/participant/" id))
(defn- subjects [path] (mapv #(get % "subject") (:json (req path))))

(defn- search
  "The sender links of a search once `ok?` holds (search is eventually consistent), or the last answer after 5 s."
  [words ok?]
  (:json (u/eventually 5000 #(ok? (:json %)) #(req (str "/outbound?keywords=" words)))))

(defn- error? [{:keys [status json]} code field]
  (and (= code status) (string? (get json "error")) (= field (get json "field"))))

(deftest items-carry-id-and-link
  (each-profile
   (fn []
     (let [a (participant! "Ann") b (participant! "Bob")]
       (post (str (link a) "/friends") {:to (link b)})
       (let [j (:json (post (str (link a) "/outbound") {:occurred "2026-11-22" :subject "one" :story "first words"}))
             f (:json (req (str (link a) "/outbound") :method :post :form {:subject "two" :story "second words"}))]
         (is (integer? (get j "id")))
         (is (= (str (link a) "/outbound/" (get j "id")) (get j "link")))
         (is (= (str (link a) "/outbound/" (get f "id")) (get f "link")) "form bodies too")
         (is (not= (get j "id") (get f "id")))
         (settle)
         (is (= [(get f "link") (get j "link")] (mapv #(get % "link") (:json (req (str (link a) "/outbound"))))))
         (is (= [(get f "link") (get j "link")] (mapv #(get % "link") (:json (req (str (link b) "/inbound"))))))
         (is (= [(get f "id") (get j "id")] (mapv #(get % "id") (:json (req (str (link b) "/inbound"))))))
         (testing "GET of the link answers the post item"
           (let [r (req (get j "link"))]
             (is (= 200 (:status r)))
             (is (= j (:json r)))))
         (testing "404 for another participant's path, an unknown post, an unknown participant; 400 for a bad id"
           (is (error? (req (str (link b) "/outbound/" (get j "id"))) 404 "postId"))
           (is (error? (req (str (link a) "/outbound/999999")) 404 "postId"))
           (is (error? (req (str "/participant/999999/outbound/" (get j "id"))) 404 "postId"))
           (is (error? (req (str (link a) "/outbound/abc")) 400 "postId"))
           (is (error? (req (str (link a) "/outbound/0")) 400 "postId"))
           (is (error? (req (str "/participant/x/outbound/" (get j "id"))) 400 "id"))))))))

(deftest edits-reach-outbound-inbound-and-search
  (each-profile
   (fn []
     (let [a (participant! "Ann") b (participant! "Bob") c (participant! "Cy")]
       (post (str (link a) "/friends") {:to (link b)})
       (post (str (link a) "/friends") {:to (link c)})
       (let [j (:json (post (str (link a) "/outbound") {:occurred "2026-11-22" :subject "typo" :story "the quick brwn fox"}))
             later (:json (post (str (link a) "/outbound") {:subject "later" :story "unrelated"}))
             lk (get j "link")]
         (settle)
         (is (= [(link a)] (search "brwn" #(= 1 (count %)))))
         (let [r (req lk :method :patch :json {:story "the quick brown fox"})]
           (is (= 200 (:status r)))
           (is (= (assoc j "story" "the quick brown fox") (:json r)) "the edited item, id, link and time kept"))
         (is (= ["later" "typo"] (subjects (str (link a) "/outbound"))) "its place in the feed is kept")
         (is (= "the quick brown fox" (get-in (req (str (link a) "/outbound")) [:json 1 "story"])) "outbound at once")
         (is (= "the quick brown fox" (get-in (req lk) [:json "story"])))
         (settle)
         (doseq [r [b c]]
           (is (= ["the quick brown fox" "unrelated"] (sort (mapv #(get % "story") (:json (req (str (link r) "/inbound"))))))))
         (is (= [(link a)] (search "brown" #(= 1 (count %)))) "search finds the new words")
         (is (= [] (search "brwn" empty?)) "and no longer the old ones")
         (testing "the subject alone, then both; form bodies too"
           (is (= "fixed" (get-in (req lk :method :patch :json {:subject "fixed"}) [:json "subject"])))
           (is (= "the quick brown fox" (get-in (req lk) [:json "story"])) "the story untouched")
           (let [r (req lk :method :patch :form {:subject "s2" :story "a lazy dog"})]
             (is (= ["s2" "a lazy dog"] [(get-in r [:json "subject"]) (get-in r [:json "story"])])))
           (is (= [(link a)] (search "lazy" #(= 1 (count %)))))
           (is (= [] (search "brown" empty?)))
           (is (= [(link a)] (search "s2" #(= 1 (count %)))) "the subject is indexed too")
           (settle)
           (is (= "s2" (get-in (req (str (link b) "/inbound")) [:json 1 "subject"]))))
         (testing "errors: 400 naming the field, 404, and nothing changed"
           (is (error? (req lk :method :patch :json {}) 400 "subject"))
           (is (error? (req lk :method :patch :json {:story 42}) 400 "story"))
           (let [r (req lk :method :patch :json {:subject nil :story "x"})]
             ;; was "'subject' is required", though a PATCH needs only one of the two (found probing null fields)
             (is (error? r 400 "subject"))
             (is (re-find #"'subject' must be a string, got null" (get-in r [:json "error"])) (pr-str r)))
           (is (error? (req lk :method :patch :json {:subject ["a" "b"]}) 400 "subject"))
           (is (error? (req lk :method :patch :json {:subject (apply str (repeat 1001 "x"))}) 400 "subject"))
           (is (error? (req lk :method :patch :body "{\"story\":\"a\\ud800\"}" :content-type "application/json") 400 "story"))
           (is (error? (req lk :method :patch :body "{\"story\":" :content-type "application/json") 400 "body"))
           (is (error? (req lk :method :patch :body "[1]" :content-type "application/json") 400 "body"))
           (is (error? (req lk :method :patch :body "story=x" :content-type "text/plain") 415 "Content-Type"))
           (is (error? (req (str (link b) "/outbound/" (get j "id")) :method :patch :json {:story "hijack"}) 404 "postId"))
           (is (error? (req (str (link a) "/outbound/999999") :method :patch :json {:story "x"}) 404 "postId"))
           (is (error? (req (str (link a) "/outbound/x1") :method :patch :json {:story "x"}) 400 "postId"))
           (is (= ["s2" "a lazy dog"] ((juxt #(get % "subject") #(get % "story")) (:json (req lk))))))
         (is (= "unrelated" (get-in (req (get later "link")) [:json "story"])) "other posts untouched"))))))

(deftest deletes-reach-outbound-inbound-and-search
  (each-profile
   (fn []
     (let [a (participant! "Ann") b (participant! "Bob")]
       (post (str (link a) "/friends") {:to (link b)})
       (let [keep (:json (post (str (link a) "/outbound") {:subject "keep" :story "stays here"}))
             gone (:json (post (str (link a) "/outbound") {:subject "gone" :story "vanishing ink"}))]
         (settle)
         (is (= [(link a)] (search "vanishing" #(= 1 (count %)))))
         (is (error? (req (str (link b) "/outbound/" (get gone "id")) :method :delete) 404 "postId") "not the sender")
         (let [r (req (get gone "link") :method :delete)]
           (is (= 204 (:status r)))
           (is (= "" (:body r))))
         (is (= ["keep"] (subjects (str (link a) "/outbound"))) "gone from outbound at once")
         (is (error? (req (get gone "link")) 404 "postId"))
         (is (error? (req (get gone "link") :method :delete) 404 "postId") "a second DELETE is a 404")
         (is (error? (req (get gone "link") :method :patch :json {:story "back"}) 404 "postId") "no edit after delete")
         (settle)
         (is (= ["keep"] (subjects (str (link b) "/inbound"))))
         (is (= [] (search "vanishing" empty?)))
         (is (= [(link a)] (search "stays" #(= 1 (count %)))))
         (testing "paging skips deleted posts and stays full"
           (let [ids (mapv #(get-in (post (str (link a) "/outbound") {:subject (str "p" %) :story "page"}) [:json "id"]) (range 6))]
             (settle)
             (doseq [id (take 4 (drop 1 ids))]
               (is (= 204 (:status (req (str (link a) "/outbound/" id) :method :delete)))))
             (doseq [who [a b]
                     :let [feed (str (link who) (if (= who a) "/outbound" "/inbound"))
                           p1 (req (str feed "?limit=2"))
                           next (second (re-find #"<([^>]+)>" (str (get-in p1 [:headers "link"]))))
                           p2 (req next)]]
               (is (= ["p5" "p0"] (mapv #(get % "subject") (:json p1))) feed)
               (is (= ["keep"] (mapv #(get % "subject") (:json p2))) feed))))
         (is (error? (req (str (link a) "/outbound/" (get keep "id")) :method :put :json {}) 405 "method")))))))

(deftest edits-and-deletes-survive-a-restart
  (let [dir (u/temp-dir "herald-feed-posts-restart")]
    (try
      (let [[a b e d] (with-feed dir
                        (fn []
                          (let [a (participant! "Ann") b (participant! "Bob")]
                            (post (str (link a) "/friends") {:to (link b)})
                            (let [e (:json (post (str (link a) "/outbound") {:subject "old" :story "obsolete wording"}))
                                  d (:json (post (str (link a) "/outbound") {:subject "bye" :story "doomed wording"}))]
                              (settle)
                              (is (= 200 (:status (req (get e "link") :method :patch :json {:story "current wording"}))))
                              (is (= 204 (:status (req (get d "link") :method :delete))))
                              [a b e d]))))]
        (with-feed dir
          (fn []
            (is (= ["current wording"] (mapv #(get % "story") (:json (req (str (link a) "/outbound"))))))
            (is (= ["current wording"] (mapv #(get % "story") (:json (req (str (link b) "/inbound"))))))
            (is (error? (req (get d "link")) 404 "postId"))
            (is (= [(link a)] (search "current" #(= 1 (count %)))))
            (is (= [] (search "obsolete" empty?)))
            (is (= [] (search "doomed" empty?)))
            (is (= "current wording" (get-in (req (get e "link")) [:json "story"]))))))
      (finally (u/delete-tree! dir)))))

(deftest openapi-describes-the-post-link
  (with-feed nil
    (fn []
      (let [doc (:json (req "/openapi.json"))
            ops (get-in doc ["paths" "/participant/{id}/outbound/{postId}"])]
        (is (= #{"get" "patch" "delete"} (set (keys ops))))
        (is (= #{"outbound-get-one" "outbound-patch" "outbound-delete"} (set (map #(get % "operationId") (vals ops)))))
        (is (contains? (get-in ops ["delete" "responses"]) "204"))
        (is (= "#/components/schemas/OutboundEdit" (get-in ops ["patch" "requestBody" "content" "application/json" "schema" "$ref"])))
        (is (some #{"link"} (get-in doc ["components" "schemas" "Inbound" "required"])))))))

;; with auth on (issue 11, identity): only the sender edits or deletes its post; reading it stays public

(def ^:private ^String secret "posts-test-secret-of-more-than-256-bits-0123456789")

(defn- authed
  "The status of a request with bearer `token` (nil: none) and an optional JSON body."
  [path method token body]
  (let [b (cond-> (HttpRequest/newBuilder (URI/create (str *base* path)))
            body (.header "Content-Type" "application/json")
            token (.header "Authorization" (str "Bearer " token))
            true (.method method (if body (HttpRequest$BodyPublishers/ofString (json/write-str body))
                                     (HttpRequest$BodyPublishers/noBody))))]
    (.statusCode ^HttpResponse (.send u/client (.build b) (HttpResponse$BodyHandlers/ofString)))))

(deftest only-the-sender-edits-or-deletes-with-auth-on
  (let [sys (u/start-feed! nil {:auth {:enabled? true :hs256-secret secret}})]
    (try
      (binding [*sys* sys *base* (feed/url sys)]
        (let [a (participant! "Ann") b (participant! "Bob")
              ta (jwt/mint secret a 600) tb (jwt/mint secret b 600)]
          (is (= 401 (authed (str (link a) "/outbound") "POST" nil {:subject "s" :story "t"})))
          (is (= 200 (authed (str (link a) "/outbound") "POST" ta {:subject "mine" :story "by Ann"})))
          (let [lk (get-in (req (str (link a) "/outbound")) [:json 0 "link"])]
            (is (= 200 (:status (req lk))) "reading a post stays public")
            (is (= 401 (authed lk "PATCH" nil {:story "x"})))
            (is (= 403 (authed lk "PATCH" tb {:story "x"})) "another participant's token")
            (is (= 403 (authed lk "DELETE" tb nil)))
            (is (= 200 (authed lk "PATCH" ta {:story "edited by Ann"})))
            (is (= "edited by Ann" (get-in (req lk) [:json "story"])))
            (is (= 204 (authed lk "DELETE" ta nil)))
            (is (= 404 (:status (req lk)))))))
      (finally (feed/stop! sys)))))
