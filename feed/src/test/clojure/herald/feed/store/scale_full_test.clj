(ns herald.feed.store.scale-full-test
  "The :scale store with every role on its real server (PostgreSQL, Cassandra, OpenSearch, Redis, each started by
  its test fixture): the search catch-up after a crash while search was down, and the service over HTTP on the
  bundled :scale profile."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.servers.cassandra :as cass]
            [herald.feed.servers.kafka :as sk]
            [herald.feed.servers.opensearch :as osn]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.redis :as rd]
            [herald.feed.store :as s]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.scale]
            [herald.feed.test-util :as tu])
  (:import (java.util.concurrent ExecutorService)))

(set! *warn-on-reflection* true)

(def ^:private names (atom 0))

(defn- fresh [prefix] (str prefix (Long/toString (System/currentTimeMillis) 36) "_" (swap! names inc)))

(defn- with-servers
  "(f {:graph :feeds :search :cache}) with the four role configs on the test servers (fresh schema, keyspace,
  index, prefix), or a skip naming the server that is missing."
  [f]
  (let [missing (or (some-> (:error (pg/info)) (str "PostgreSQL: "))
                    (when-not (sk/bootstrap) (str "Kafka: " (sk/failure)))
                    (some-> (:error (rd/info)) (str "Redis: "))
                    (some->> (osn/skip-reason) (str "OpenSearch: ")))]
    (if missing
      (clojure.test/do-report {:type :skip :message missing})
      (when-let [cp (cass/contact-point)]
        (f {:graph (assoc (pg/fresh-config) :type :postgres)
            :feeds {:type :cassandra :contact-points [cp] :keyspace (fresh "full") :request-timeout-ms 30000}
            :search {:type :opensearch :url (osn/url) :index (fresh "full-") :max-lag-ms 0}
            :cache (assoc (rd/fresh-config) :type :redis)})))))

(deftest ^:integration an-acknowledged-post-is-searchable-after-a-crash-while-search-was-down
  (with-servers
    (fn [roles]
      (let [config (assoc roles :type :scale)
            st (s/open-store config)
            a (:id (s/create-participant! st "Ann"))
            b (:id (s/create-participant! st "Bob"))
            _ (s/befriend! st a b)
            p0 (s/publish! st (post-of a "zebra before the outage") [b])
            _ (s/index! st p0)
            search (:search st)]
        ;; search goes away: indexing fails, the posts are acknowledged all the same
        (s/close-store! search)
        (let [ps (vec (for [i (range 5)] (s/publish! st (post-of a (str "zebra during the outage " i)) [b])))]
          (is (every? #(try (s/index! st %) false (catch Exception _ true)) ps) "indexing fails while search is down")
          ;; the crash: no close, the marker stops, the connections go
          (.shutdownNow ^ExecutorService (.-marker ^herald.feed.store.scale.MarkProgress (:progress st)))
          (doseq [r [:graph :feeds :cache]] (s/close-store! (get st r)))
          (let [st2 (s/open-store config)]
            (try
              (is (= (repeat 6 a) (s/search st2 "zebra" {:limit 100})) "every acknowledged post, once")
              (is (= 5 (count (s/search st2 "during"))))
              (is (= "Bob" (:name (s/participant st2 b))) "the graph survived in PostgreSQL")
              (is (= (set (map :id (cons p0 ps))) (set (map (comp :id :post) (s/pending-fanouts st2))))
                  "the fan-outs are still pending in Cassandra")
              (finally (s/close-store! st2)))))))))

(deftest ^:integration the-service-runs-on-every-real-server
  (with-servers
    (fn [{:keys [graph feeds search cache]}]
      (let [env {"HERALD_PROFILE" "scale" "PG_URL" (:jdbc-url graph) "PG_USER" (:user graph)
                 "PG_PASSWORD" (:password graph) "REDIS_URI" (:uri cache)
                 "CASSANDRA_CONTACT_POINTS" (first (:contact-points feeds)) "CASSANDRA_KEYSPACE" (:keyspace feeds)
                 "OPENSEARCH_URL" (:url search) "OPENSEARCH_INDEX" (:index search)
                 "KAFKA_BOOTSTRAP" (sk/bootstrap) "KAFKA_TOPIC_PREFIX" (str (:index search) "-")
                 "DATA_DIR" (tu/temp-dir "scale-full-") "HERALD_AUTH" "false"}
            sys (feed/start! {:env env :config {:http {:port 0 :host "127.0.0.1"}
                                                :store {:graph {:schema (:schema graph)}
                                                        :cache {:prefix (:prefix cache)}}}})
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
