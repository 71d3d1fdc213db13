(ns herald.feed.store.relations-restart-test
  "The embedded store's relationships (issue 11) survive a restart (close, then open on the same data directory)."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
            [herald.feed.store.fixtures :as fx]))

(set! *warn-on-reflection* true)

(defn- open [dir] (s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16}))

(deftest relationships-survive-a-restart
  (let [dir (fx/temp-dir "relations")]
    (try
      (let [[a b c d e] (let [st (open dir)]
                          (try (let [[a b c d e] (map :id (repeatedly 5 #(s/create-participant! st "p")))]
                                 (s/befriend! st a b) (s/befriend! st a c) (s/befriend! st a d)
                                 (s/unfriend! st c a)
                                 (s/mute! st a d) (s/mute! st a e) (s/unmute! st a e)
                                 (s/block! st b a) (s/block! st e b) (s/unblock! st e b)
                                 [a b c d e])
                               (finally (s/close-store! st))))
            st (open dir)]
        (try
          (is (= [d] (map :to (s/friends st a))) "the unfriend and the block's unfriend are durable")
          (is (= [] (map :to (s/friends st c))))
          (is (= [d] (s/mutes st a)))
          (is (= [a] (s/blocks st b)))
          (is (= [] (s/blocks st e)))
          (is (= #{b d} (s/hidden st a)))
          (is (= #{a} (s/hidden st b)))
          (is (= :herald.feed.store/blocked (try (s/befriend! st a b) nil (catch clojure.lang.ExceptionInfo x (:type (ex-data x))))))
          (let [f (s/befriend! st a c)]
            (is (:created? f))
            (is (< 3 (:id f)) "friendship ids are not reused after an unfriend and a restart"))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir)))))
