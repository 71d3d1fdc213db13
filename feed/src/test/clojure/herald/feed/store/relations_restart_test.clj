(ns herald.feed.store.relations-restart-test
  "The embedded store's relationships (issue 11) survive a restart (close, then open on the same data directory)."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.fixtures :as fx]))

(set! *warn-on-reflection* true)

(defn- open [dir] (s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16}))

(deftest relationships-survive-a-restart
  (let [dir (fx/temp-dir "relations")]
    (try
      (let [[a b c d e] (let [st (open dir)]
                          (try (let [[a b c d e] (map :id (repeatedly 5 #(graph/create-participant! st "p")))]
                                 (graph/befriend! st a b) (graph/befriend! st a c) (graph/befriend! st a d)
                                 (graph/unfriend! st c a)
                                 (graph/mute! st a d) (graph/mute! st a e) (graph/unmute! st a e)
                                 (graph/block! st b a) (graph/block! st e b) (graph/unblock! st e b)
                                 [a b c d e])
                               (finally (s/close-store! st))))
            st (open dir)]
        (try
          (is (= [d] (map :to (graph/friends st a))) "the unfriend and the block's unfriend are durable")
          (is (= [] (map :to (graph/friends st c))))
          (is (= [d] (graph/mutes st a)))
          (is (= [a] (graph/blocks st b)))
          (is (= [] (graph/blocks st e)))
          (is (= #{b d} (graph/hidden st a)))
          (is (= #{a} (graph/hidden st b)))
          (is (= :herald.feed.store/blocked (try (graph/befriend! st a b) nil (catch clojure.lang.ExceptionInfo x (:type (ex-data x))))))
          (let [f (graph/befriend! st a c)]
            (is (:created? f))
            (is (< 3 (:id f)) "friendship ids are not reused after an unfriend and a restart"))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir)))))
