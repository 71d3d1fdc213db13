(ns herald.feed.store.deleted-copies-test
  "The embedded store removes every inbound copy of a deleted post from RocksDB (issue 11), not only hides it: the
  copies of friends whose friendship ended (an unfriend, a block) before the delete go in the delete's atomic write,
  and a copy the delete could not reach (a fan-out in flight, a store written by an older build) goes when a read
  meets it. The rows are checked in RocksDB itself, where a skipped copy would still take space."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.embedded]
            [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.rocks :as rocks]
            [herald.feed.store.fixtures :as fx]))

(set! *warn-on-reflection* true)

(defn- open [dir]
  (s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16
                 :search-max-lag-ms 0}))

(defn- db-of [st] (.-db ^herald.feed.store.embedded.EmbeddedStore (:feeds st)))

(defn- copy? [db recipient {:keys [id ts]}]
  (some? (rocks/get-bytes db :inbound (c/feed-key recipient ts id))))

(defn- with-rocks
  "(f db) on the RocksDB of the closed store in dir."
  [dir f]
  (let [db (rocks/open-db (io/file dir "rocksdb") {:sync? false :block-cache-mb 8 :write-buffer-mb 4})]
    (try (f db) (finally (rocks/close-db! db)))))

(deftest a-delete-removes-the-copies-of-former-friends
  (let [dir (fx/temp-dir "deleted-copies")]
    (try
      (let [[a b d] (let [st (open dir)]
                        (try
                          (let [[a b c d] (map :id (repeatedly 4 #(graph/create-participant! st "p")))]
                            (doseq [x [b c d]] (graph/befriend! st a x))
                            (let [p (feeds/publish! st (post-of a "gone" "soon gone") [b c d])
                                  q (feeds/publish! st (post-of a "kept" "stays") [b c d])]
                              (feeds/fan-out! st p [b c d])
                              (feeds/fan-out! st q [b c d])
                              (is (every? #(copy? (db-of st) % p) [b c d]) "delivered to all three")
                              (graph/unfriend! st a b)
                              (graph/block! st c a)
                              (s/delete-post! st (:id p))
                              (is (not-any? #(copy? (db-of st) % p) [b c d])
                                  "an unfriended, a blocking and a current friend: no copy left in RocksDB")
                              (is (every? #(copy? (db-of st) % q) [b c d]) "the other post's copies stay")
                              (is (= [(:id q)] (map :id (:items (feeds/inbound st b)))) "posts delivered before the unfriend stay")
                              [a b d]))
                          (finally (s/close-store! st))))]
        (testing "after a reopen, a friendship ended and made again still counts"
          (let [st (open dir)]
            (try
              (graph/befriend! st a b)
              (let [r (feeds/publish! st (post-of a "again" "after refriending") [b d])]
                (feeds/fan-out! st r [b d])
                (graph/unfriend! st a b)
                (graph/befriend! st a b)
                (graph/unfriend! st a b)
                (s/delete-post! st (:id r))
                (is (not-any? #(copy? (db-of st) % r) [b d])))
              (finally (s/close-store! st))))))
      (finally (fx/delete-tree! dir)))))

(deftest a-read-removes-a-copy-the-delete-could-not-reach
  (let [dir (fx/temp-dir "dangling-copies")]
    (try
      (let [[b p q] (let [st (open dir)]
                      (try
                        (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
                              p (feeds/publish! st (post-of a "gone" "deleted before its copy landed") [])
                              q (feeds/publish! st (post-of a "kept" "live") [b])]
                          (feeds/fan-out! st q [b])
                          (s/delete-post! st (:id p))
                          [b p q])
                        (finally (s/close-store! st))))]
        ;; a copy of the deleted post written behind the delete's back (what a fan-out in flight, or an older
        ;; build's delete after an unfriend, leaves)
        (with-rocks dir #(rocks/put! % :inbound (c/feed-key b (:ts p) (:id p)) (c/long-key (:from p))))
        (is (with-rocks dir #(copy? % b p)))
        (let [st (open dir)]
          (try
            (is (= [(:id q)] (map :id (:items (feeds/inbound st b)))) "the copy is skipped")
            (is (not (copy? (db-of st) b p)) "and removed by the read")
            (is (copy? (db-of st) b q) "the live post's copy stays")
            (finally (s/close-store! st)))))
      (finally (fx/delete-tree! dir)))))
