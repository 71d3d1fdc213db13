(ns herald.feed.scale-posts-test
  "^:integration issue 11 on the Kafka log: GET, PATCH and DELETE of a post's link over HTTP, the author's copy
  changed before the answer, the inbound copies and the search index following through the Kafka Streams jobs;
  on the memory store with a real Kafka broker, and on the bundled :scale profile with every role on its real
  server (PostgreSQL, Cassandra, OpenSearch, Redis, Kafka; skipped naming a missing one)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.events-test :as et]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.servers.scale :as scale]
            [herald.feed.test-util :as tu]))

(set! *warn-on-reflection* true)

(defn- error? [{:keys [status json]} code field]
  (and (= code status) (string? (get json "error")) (= field (get json "field"))))

(defn- exercise
  "Posts, edits and deletes over HTTP on the feed `sys` and checks every copy."
  [sys]
  (let [base (feed/url sys)
        req (fn [& args] (apply tu/request base args))
        link #(str "/participant/" %)
        id #(get-in (req "/participant" :method :post :json {:name %}) [:json "id"])
        a (id "Ann") b (id "Bob") c (id "Cy")
        subjects (fn [path] (mapv #(get % "subject") (:json (req (str path "?limit=100")))))
        search (fn [w ok?] (:json (tu/eventually 30000 #(ok? (:json %)) #(req (str "/outbound?keywords=" w "&limit=100")))))]
    (req (str (link a) "/friends") :method :post :json {:to (link b)})
    (req (str (link a) "/friends") :method :post :json {:to (link c)})
    (let [e (:json (req (str (link a) "/outbound") :method :post :json {:subject "typo" :story "kafkaesque mistpyed"}))
          d (:json (req (str (link a) "/outbound") :method :post :json {:subject "doomed" :story "kafkaesque ephemeral"}))
          k (:json (req (str (link a) "/outbound") :method :post :json {:subject "kept" :story "kafkaesque steady"}))]
      (is (= (str (link a) "/outbound/" (get e "id")) (get e "link")))
      (is (= e (:json (req (get e "link")))) "GET of the link")
      (is (error? (req (str (link b) "/outbound/" (get e "id"))) 404 "postId"))
      ;; edit and delete at once, while the fan-out of the posts may still run: the change records follow the
      ;; post's record in its partition
      (let [r (req (get e "link") :method :patch :json {:story "kafkaesque mistyped"})]
        (is (= 200 (:status r)))
        (is (= (assoc e "story" "kafkaesque mistyped") (:json r))))
      (is (= 204 (:status (req (get d "link") :method :delete))))
      (testing "the author's copy changed before the answer"
        (is (= ["kept" "typo"] (subjects (str (link a) "/outbound"))))
        (is (= "kafkaesque mistyped" (get-in (req (get e "link")) [:json "story"])))
        (is (error? (req (get d "link")) 404 "postId"))
        (is (error? (req (get d "link") :method :delete) 404 "postId") "a second DELETE"))
      (is (true? (feed/await-fanout sys 60000)))
      (testing "every inbound copy follows"
        (doseq [r [b c]]
          (let [items (:json (tu/eventually 30000 #(= 2 (count (:json %))) #(req (str (link r) "/inbound?limit=100"))))]
            (is (= ["kept" "typo"] (mapv #(get % "subject") items)))
            (is (= "kafkaesque mistyped" (get (second items) "story"))))))
      (testing "search follows: new words found, old and deleted ones not"
        (is (= [(link a)] (search "mistyped" #(= 1 (count %)))))
        (is (= [] (search "mistpyed" empty?)))
        (is (= [] (search "ephemeral" empty?)))
        (is (= [(link a) (link a)] (search "kafkaesque" #(= 2 (count %))))))
      (testing "a later edit of the subject"
        (is (= "fixed" (get-in (req (get k "link") :method :patch :json {:subject "fixed"}) [:json "subject"])))
        (is (true? (feed/await-fanout sys 60000)))
        (is (= ["fixed" "typo"] (subjects (str (link b) "/inbound"))))))))

(deftest ^:integration edits-and-deletes-go-through-kafka
  (sk/with-broker bootstrap
    (let [dir (tu/temp-dir "feed-kafka-posts-")
          sys (tu/start-feed! nil {:events (et/kafka-events bootstrap (str "t" (random-uuid) "-") dir)})]
      (try (exercise sys)
           (finally (feed/stop! sys) (tu/delete-tree! dir))))))

(deftest ^:integration edits-and-deletes-on-every-real-server
  (scale/with-servers "posts"
    (fn [roles]
      (let [sys (scale/start-feed! roles "posts")]
        (try (exercise sys)
             (finally (feed/stop! sys)))))))
