(ns herald.feed.service-test
  "Tests of the service operations over the in-memory store: semantics of the contract and validation naming the field."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.service :as svc]
            [herald.feed.store :as store]
            [herald.feed.store.graph :as graph]))

(set! *warn-on-reflection* true)

(defn- ctx
  "A context over a memory store and the fan-out jobs."
  []
  (let [s (store/open-store {:type :memory})]
    (svc/context s (posts/flow-fanout s {:threads 1}) {})))

(defn- err [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e (assoc (ex-data e) :message (ex-message e)))))

(deftest parse-links-and-ids
  (is (= 7 (svc/parse-link "from" "/participant/7")))
  (is (= 7 (svc/parse-link "from" "http://feed.example/participant/7")))
  (is (= 7 (svc/parse-link "from" "7")))
  (is (= 7 (svc/parse-link "from" 7)))
  (doseq [bad ["/participant/x" "/participant/0" "" nil -3 1.5 "/participant/99999999999999999999" {}]]
    (is (= "from" (:field (err #(svc/parse-link "from" bad)))) (pr-str bad)))
  (is (= {:type :herald.feed/bad-request :field "id" :value "abc"}
         (dissoc (err #(svc/parse-id "id" "abc")) :message))))

(deftest occurred-is-kept-as-posted
  (is (= "2026-11-22" (svc/parse-occurred {:occurred "2026-11-22"})))
  (is (= "2014-01-05T19:25:51.490Z" (svc/parse-occurred {:occurred "2014-01-05T19:25:51.490Z"})))
  (is (re-matches #"\d{4}-\d{2}-\d{2}" (svc/parse-occurred {})) "missing means today")
  (doseq [bad ["2026-13-01" "2026-02-30" "2026-00-10" "22/11/2026" "2026-11-22Tnoon" 20261122]]
    (is (= "occurred" (:field (err #(svc/parse-occurred {:occurred bad})))) (pr-str bad))))

(deftest participants-friends-posts-and-fan-out
  (let [{:keys [fanout] :as c} (ctx)
        a (:id (svc/create-participant! c {:name "Ann"}))
        b (:id (svc/create-participant! c {:name "Bob ☃"}))
        z (:id (svc/create-participant! c {:name "Zoe"}))]
    (is (= {:id b :name "Bob ☃"} (svc/participant c b)))
    (let [f1 (svc/befriend! c a {:from (svc/link a) :to (svc/link b)})
          f2 (svc/befriend! c b {:from (svc/link b) :to (svc/link a)})]
      (is (= {:from a :to b} (select-keys f1 [:from :to])))
      (is (= (:id f1) (:id f2)) "symmetric and idempotent"))
    (is (= [b] (map :to (svc/friends c a))))
    (is (= [a] (map :to (svc/friends c b))))
    (let [p (svc/publish! c a {:from (svc/link a) :occurred "2026-11-22" :subject "hello" :story "snow falls"})]
      (is (= {:from a :occurred "2026-11-22" :subject "hello" :story "snow falls"} (select-keys p [:from :occurred :subject :story]))))
    (svc/publish! c a {:occurred "2026-11-23" :subject "second" :story "more snow"})
    (is (fanout/await-idle fanout 5000))
    (is (= ["second" "hello"] (map :subject (:items (svc/outbound c a {:limit 10})))))
    (is (= ["second" "hello"] (map :subject (:items (svc/inbound c b {:limit 10})))))
    (is (empty? (:items (svc/inbound c z {:limit 10}))) "not a friend")
    (is (= [a a] (svc/search c "snow" 10)))
    (is (= [a] (svc/search c "falls" 10)))
    (testing "friends added later do not receive older posts"
      (svc/befriend! c z {:to (svc/link a)})
      (is (fanout/await-idle fanout 5000))
      (is (empty? (:items (svc/inbound c z {:limit 10})))))
    (testing "paging"
      (let [p1 (svc/outbound c a {:limit 1})
            p2 (svc/outbound c a {:limit 1 :before (:next p1)})]
        (is (= ["second"] (map :subject (:items p1))))
        (is (= ["hello"] (map :subject (:items p2))))
        (is (nil? (:next p2)))))
    (fanout/close! fanout 10000)))

(deftest errors-name-the-field-and-leave-no-state
  (let [{:keys [store fanout] :as c} (ctx)
        a (:id (svc/create-participant! c {:name "Ann"}))
        b (:id (svc/create-participant! c {:name "Bob"}))]
    (is (= "name" (:field (err #(svc/create-participant! c {})))))
    (is (= "name" (:field (err #(svc/create-participant! c {:name "  "})))))
    (is (= "name" (:field (err #(svc/create-participant! c {:name 42})))))
    (is (= "name" (:field (err #(svc/create-participant! c {:name ["a" "b"]})))) "repeated form key")
    (is (= {:type :herald.feed/not-found :field "id"} (select-keys (err #(svc/participant c 999)) [:type :field])))
    (is (= "to" (:field (err #(svc/befriend! c a {:from (svc/link a) :to (svc/link a)})))) "self-friendship")
    (is (= "to" (:field (err #(svc/befriend! c a {:from (svc/link a)})))))
    (is (= "from" (:field (err #(svc/befriend! c 99 {:from (svc/link a) :to (svc/link b)})))) "path not a party")
    (is (= {:type :herald.feed/not-found :field "to"}
           (select-keys (err #(svc/befriend! c a {:to "/participant/999"})) [:type :field])))
    (is (= "from" (:field (err #(svc/publish! c a {:from (svc/link b) :subject "s" :story "t"})))))
    (is (= "story" (:field (err #(svc/publish! c a {:subject "s"})))))
    (is (= "subject" (:field (err #(svc/publish! c a {:story "s" :subject 3})))))
    (is (= :herald.feed/not-found (:type (err #(svc/publish! c 999 {:subject "s" :story "t"})))))
    (is (= "keywords" (:field (err #(svc/search c nil 10)))))
    (is (empty? (svc/friends c a)))
    (is (empty? (:items (svc/outbound c a {:limit 10}))))
    (is (= 2 (:participants (store/stats store))))
    (fanout/close! fanout 10000)))

(deftest page-options
  (let [limits svc/default-limits]
    (is (= {:limit 50} (svc/page-opts limits {} :default-limit :max-limit)))
    (is (= {:limit 7 :before "c"} (svc/page-opts limits {"limit" "7" "before" "c"} :default-limit :max-limit)))
    (doseq [bad ["0" "-1" "x" "1001" "1.5"]]
      (is (= "limit" (:field (err #(svc/page-opts limits {"limit" bad} :default-limit :max-limit)))) bad))))

(deftest limits-are-validated-naming-the-key
  (let [s (store/open-store {:type :memory})
        e #(try (svc/context s nil %) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
    (is (nil? (e {:default-limit 10})))
    (is (= :default-limit (:key (e {:default-limit 0}))))
    (is (= :max-limit (:key (e {:max-limit "many"}))))
    (is (= :default-limit (:key (e {:default-limit 2000}))) "default above max")
    (is (= :page-size (:key (e {:page-size 5}))) "unknown key")))

(deftest a-participant-found-once-is-not-asked-of-the-store-again
  (let [c (ctx)
        a (:id (svc/create-participant! c {:name "Ann"}))
        asked (atom [])
        lookup graph/participant]
    (with-redefs [graph/participant (fn [s id] (swap! asked conj id) (lookup s id))]
      (is (= {:id a :name "Ann"} (svc/participant c a)))
      (dotimes [_ 3] (svc/publish! c a {:subject "s" :story "t" :occurred "2026-11-26"}))
      (is (= [a] @asked) "found once: the posts that follow use the context's own copy")
      (is (= :herald.feed/not-found (:type (err #(svc/participant c 999999)))))
      (is (= :herald.feed/not-found (:type (err #(svc/participant c 999999)))))
      (is (= [a 999999 999999] @asked) "an id not found is asked again (it may be created meanwhile)"))
    (testing "a context made without the map still reads the store"
      (is (= {:id a :name "Ann"} (svc/participant (dissoc c :participants) a))))))
