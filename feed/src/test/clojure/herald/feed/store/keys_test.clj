(ns herald.feed.store.keys-test
  "The idempotency key roles (herald.feed.store.keys) on every backend that has them: KeyReservations on memory and
  PostgreSQL, KeyedPublish on memory and embedded. Concurrent calls with one key agree on one post; a live record is
  returned whatever the fields; an expired one is replaced; a purge deletes the expired ones only."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.search :as search]
            [herald.feed.store.postgres :as postgres]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(defn- k [key fp now ttl] {:owner 7 :key key :fingerprint fp :now now :expires-at (+ (long now) (long ttl))})

(defn- prepared [id] {:id id :ts (* 10 (long id)) :from 7 :occurred "2026-11-26" :subject (str "s" id) :story "x\u0000y"})

(defn- check-reservations [st]
  (let [now (System/currentTimeMillis)
        rs (mapv deref (mapv (fn [i] (future (keys/reserve-key! st (assoc (k "a" "fp" now 60000) :post (prepared (inc i)))))) (range 16)))]
    (is (= 1 (count (set (map :post rs)))) "one post for every concurrent call")
    (is (= 1 (count (filter :created? rs))) "one call wrote it")
    (is (= "x\u0000y" (:story (:post (first rs)))) "the fields as prepared, U+0000 too")
    (testing "a live record is returned, whatever the fingerprint"
      (let [r (keys/reserve-key! st (assoc (k "a" "other" now 60000) :post (prepared 99)))]
        (is (= [(:post (first rs)) "fp" false] [(:post r) (:fingerprint r) (:created? r)]))))
    (testing "an expired record is replaced; a purge deletes only expired ones"
      (keys/reserve-key! st (assoc (k "b" "fp" now 10) :post (prepared 200)))
      (let [r (keys/reserve-key! st (assoc (k "b" "fp2" (+ now 20) 60000) :post (prepared 201)))]
        (is (= [201 true] [(:id (:post r)) (:created? r)])))
      (keys/reserve-key! st (assoc (k "c" "fp" now 10) :post (prepared 300)))
      (is (= 1 (keys/purge-keys! st (+ now 20))) "c only")
      (is (= 0 (keys/purge-keys! st (+ now 20)))))))

(deftest reservations-on-memory
  (check-reservations (s/open-store {:type :memory})))

(deftest ^:integration reservations-on-postgres
  (pg/when-up
   (let [st (postgres/open (pg/fresh-config))]
     (try (check-reservations st)
          (finally (s/close-store! st))))))

(defn- check-keyed-publish [st]
  (let [now (System/currentTimeMillis)
        post {:from 7 :occurred "2026-11-26" :subject "s" :story "keyed"}
        rs (mapv deref (mapv (fn [_] (future (keys/publish-keyed! st post [8 9] (k "a" "fp" now 60000)))) (range 16)))]
    (is (= 1 (count (set (map :post rs)))))
    (is (= 1 (count (filter :created? rs))))
    (is (= 1 (count (:items (feeds/outbound st 7)))) "one post")
    (is (= [(:post (first rs))] (map :post (feeds/pending-fanouts st))) "one pending fan-out, in the same write")
    (let [r (keys/publish-keyed! st (assoc post :story "other") [8] (k "a" "fp2" now 60000))]
      (is (= [(:post (first rs)) "fp" false] [(:post r) (:fingerprint r) (:created? r)])))
    (let [r (keys/publish-keyed! st post [8] (k "a" "fp" (+ now 60001) 60000))]
      (is (:created? r) "expired: a new post")
      (is (not= (:post r) (:post (first rs)))))
    (is (= 0 (keys/purge-keys! st now)))
    (is (= 1 (keys/purge-keys! st (+ now 200000))))))

(deftest keyed-publish-on-memory
  (check-keyed-publish (s/open-store {:type :memory})))

(deftest keyed-publish-on-embedded
  (let [dir (u/temp-dir "feed-keys-")
        st (s/open-store {:type :embedded :data-dir dir})]
    (try (check-keyed-publish st)
         (testing "the records survive a reopen"
           (let [post {:from 7 :occurred "2026-11-26" :subject "s" :story "reopened"}
                 kz (k "z" "fp" (System/currentTimeMillis) 60000)
                 first-rec (keys/publish-keyed! st post [8] kz)]
             (s/close-store! st)
             (let [st2 (s/open-store {:type :embedded :data-dir dir})]
               (try (let [r (keys/publish-keyed! st2 post [8] kz)]
                      (is (= [(:post first-rec) false] [(:post r) (:created? r)])))
                    (finally (s/close-store! st2))))))
         (finally (s/close-store! st) (u/delete-tree! dir)))))

(deftest keyed-publish-on-a-scale-store-with-a-search-mark
  ;; the :scale store without a log tracks published posts for its search mark: a repeat publishes nothing, so it
  ;; must not wait for indexing again
  (let [st (s/open-store (merge (deref (requiring-resolve 'herald.feed.store.scale.roles/all-in-memory)) {:type :scale}))]
    (try
      (check-keyed-publish st)
      (let [kq (k "q" "fp" (System/currentTimeMillis) 60000)
            r (keys/publish-keyed! st {:from 7 :occurred "2026-11-26" :subject "s" :story "marked"} [] kq)]
        (search/index-batch! st [(:post r)])
        (is (false? (:created? (keys/publish-keyed! st {:from 7 :occurred "2026-11-26" :subject "s" :story "marked"} [] kq))))
        (is (= 2 (:search-pending (s/stats st))) "the two posts of check-keyed-publish, not the repeat of the indexed one"))
      (finally (s/close-store! st)))))
