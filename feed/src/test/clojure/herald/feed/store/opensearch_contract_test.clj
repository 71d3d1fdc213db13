(ns herald.feed.store.opensearch-contract-test
  "The storage contract (herald.feed.store.contract) through the :scale store with its :search role on a real
  OpenSearch node (the other roles in memory), and the search mark the :scale store keeps in it."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.servers.opensearch :as node]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :as contract]
            [herald.feed.store.opensearch :as os]
            [herald.feed.store.opensearch-test :as ot]
            [herald.feed.store.scale.roles :as roles]
            [herald.feed.store.scale.spi :as spi]))

(set! *warn-on-reflection* true)

(def ^:private indexes (atom {}))

(defn- open-scale
  "A :scale store whose search is a fresh index on the test node, read-your-writes."
  ([] (open-scale {}))
  ([opts]
   (let [index (ot/fresh-index)
         st (s/open-store (merge roles/all-in-memory {:type :scale :search {:type :opensearch :url (node/url) :index index :max-lag-ms 0}}
                                 opts))]
     (swap! indexes assoc st index)
     st)))

(defn- close-scale [st]
  (try (s/close-store! st)
       (finally (some-> (get @indexes st) node/delete-index!)
                (swap! indexes dissoc st))))

(defmacro ^:private contract-tests
  "One deftest per contract check, skipped when the node is unavailable."
  []
  `(do ~@(for [k (keys contract/checks)]
           `(deftest ~(symbol (str "opensearch-" k))
              (ot/with-node (contract/run-check open-scale close-scale (get contract/checks ~k)))))))

(contract-tests)

(deftest the-scale-store-keeps-its-search-mark-in-opensearch
  (ot/with-node
    (let [st (open-scale {:index-mark-ms 20})
          index (get @indexes st)]
      (try
        (let [a (:id (graph/create-participant! st "a"))
              ps (vec (for [i (range 5)] (feeds/publish! st (contract/post-of a (str "marked " i)) [])))]
          (search/index-batch! st ps)
          (is (= (repeat 5 a) (search/search st "marked")))
          (let [probe (os/open {:url (node/url) :index index})
                deadline (+ (System/currentTimeMillis) 60000)]
            (try
              (loop []
                (let [m (spi/-indexed-through probe)]
                  (if (or (>= m (long (:ts (peek ps)))) (> (System/currentTimeMillis) deadline))
                    (is (= (:ts (peek ps)) m) "the mark reaches the last indexed post's ts")
                    (do (Thread/sleep 20) (recur)))))
              (finally (s/close-store! probe))))
          (is (= 5 (:indexed-posts (s/stats st))) "the :search role's stats are lifted"))
        (finally (close-scale st))))))
