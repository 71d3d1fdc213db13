(ns herald.feed.store.opensearch-crash-test
  "Acknowledged writes survive a crash of the OpenSearch node (SIGKILL, then a restart on the same data): the posts
  and the indexed-through mark. ^:stress (an extra node start): run with -Dherald.test.include=stress."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.servers.opensearch :as node]
            [herald.feed.store :as s]
            [herald.feed.store.search :as search]
            [herald.feed.store.opensearch :as os]
            [herald.feed.store.opensearch-test :as ot]
            [herald.feed.store.scale.spi :as spi]))

(set! *warn-on-reflection* true)

(defn- post [id]
  {:id id :from (inc (mod id 3)) :ts (* 10 id) :occurred "2026-11-22" :subject "crash" :story (str "survivor " id)})

(deftest ^:stress acknowledged-writes-survive-a-node-crash
  (ot/with-node
    (let [;; no periodic refresh: nothing of this index is in a Lucene commit, only in the translog
          st (ot/open-fresh {:refresh-interval-ms -1 :max-lag-ms nil})
          index (:index st)]
      (try
        (search/index-batch! st (mapv post (range 1 41)))
        (search/index! st (post 41))
        (spi/-set-indexed-through! st 410)
        (s/close-store! st)
        (println "OpenSearch test node crashed and restarted in" (node/crash-and-restart!) "ms")
        (let [st2 (os/open {:url (node/url) :index index :max-lag-ms 0})]
          (try
            (is (= 410 (spi/-indexed-through st2)) "the mark survives")
            (search/refresh-search! st2)
            (is (= 41 (count (search/search st2 "survivor" {:limit 100}))) "every acknowledged post survives")
            (is (= [3] (search/search st2 "survivor 41")) "post 41, from sender 3")
            (finally (s/close-store! st2))))
        (finally (node/delete-index! index))))))
