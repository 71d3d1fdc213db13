(ns herald.feed.store.scale-full-test
  "The :scale store with every role on its real server (PostgreSQL, Cassandra, OpenSearch, Redis, each started by
  its test fixture): the search catch-up after a crash while search was down, and the service over HTTP on the
  bundled :scale profile."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.servers.scale :as scale]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.scale]
            [herald.feed.test-util :as tu])
  (:import (java.util.concurrent ExecutorService)))

(set! *warn-on-reflection* true)

(deftest ^:integration an-acknowledged-post-is-searchable-after-a-crash-while-search-was-down
  (scale/with-servers
    (fn [roles]
      (let [config (assoc roles :type :scale)
            st (s/open-store config)
            a (:id (graph/create-participant! st "Ann"))
            b (:id (graph/create-participant! st "Bob"))
            _ (graph/befriend! st a b)
            p0 (feeds/publish! st (post-of a "zebra before the outage") [b])
            _ (search/index! st p0)
            search (:search st)]
        ;; search goes away: indexing fails, the posts are acknowledged all the same
        (s/close-store! search)
        (let [ps (vec (for [i (range 5)] (feeds/publish! st (post-of a (str "zebra during the outage " i)) [b])))]
          (is (every? #(try (search/index! st %) false (catch Exception _ true)) ps) "indexing fails while search is down")
          ;; the crash: no close, the marker stops, the connections go
          (.shutdownNow ^ExecutorService (.-marker ^herald.feed.store.scale.MarkProgress (:progress st)))
          (doseq [r [:graph :feeds :cache]] (s/close-store! (get st r)))
          (let [st2 (s/open-store config)]
            (try
              (is (= (repeat 6 a) (search/search st2 "zebra" {:limit 100})) "every acknowledged post, once")
              (is (= 5 (count (search/search st2 "during"))))
              (is (= "Bob" (:name (graph/participant st2 b))) "the graph survived in PostgreSQL")
              (is (= (set (map :id (cons p0 ps))) (set (map (comp :id :post) (feeds/pending-fanouts st2))))
                  "the fan-outs are still pending in Cassandra")
              (finally (s/close-store! st2)))))))))

(deftest ^:integration the-service-runs-on-every-real-server
  (scale/with-servers
    (fn [roles]
      (let [sys (scale/start-feed! roles "full")
            base (str "http://127.0.0.1:" (feed/port sys))
            req (fn [& args] (apply tu/request base args))]
        (try
          (let [a (get-in (req "/participant" :method :post :json {"name" "Ann"}) [:json "id"])
                b (get-in (req "/participant" :method :post :json {"name" "Bob"}) [:json "id"])
                link #(str "/participant/" %)]
            (is (= 200 (:status (req (str (link a) "/friends") :method :post :json {"from" (link a) "to" (link b)}))))
            (is (= [(link a)] (map #(get % "to") (:json (req (str (link b) "/friends"))))))
            (is (= 200 (:status (req (str (link a) "/outbound") :method :post
                                     :json {"from" (link a) "occurred" "2026-11-22" "subject" "hello"
                                            "story" "every role on its server"}))))
            (is (= [(link a)] (:json (tu/eventually 30000 #(seq (:json %)) #(req "/outbound?keywords=server")))))
            (is (= 1 (count (:json (tu/eventually 30000 #(seq (:json %)) #(req (str (link b) "/inbound")))))))
            (is (= 200 (:status (req "/ready")))))
          (finally (feed/stop! sys)))))))
