(ns herald.feed.store.scale-system-test
  "The feed service started with the :scale profile (the bundled config) over HTTP: PostgreSQL and Redis real
  servers, feeds and search in memory (their servers are other tests' business), Kafka (the test broker) as the
  event log."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.redis :as rd]
            [herald.feed.test-util :as tu]))

(set! *warn-on-reflection* true)

(deftest ^:integration the-service-runs-on-the-scale-profile
  (sk/with-broker bootstrap
   (rd/when-up
    (pg/when-up
    (let [{:keys [jdbc-url user password]} (pg/info)
          env {"HERALD_PROFILE" "scale" "PG_URL" jdbc-url "PG_USER" user "PG_PASSWORD" password
               "REDIS_URI" (:uri (rd/info)) "KAFKA_BOOTSTRAP" bootstrap
               "KAFKA_TOPIC_PREFIX" (str "sys-" (System/currentTimeMillis) "-") "DATA_DIR" (tu/temp-dir "scale-sys-")
               "HERALD_AUTH" "false"}
          sys (feed/start! {:env env
                            :config {:http {:port 0 :host "127.0.0.1"}
                                     :store {:graph {:schema (:schema (pg/fresh-config))}
                                             :cache {:prefix (:prefix (rd/fresh-config))}
                                             :feeds {:type :memory} :search {:type :memory}}}})
          base (str "http://127.0.0.1:" (feed/port sys))
          req (fn [& args] (apply tu/request base args))]
      (try
        (let [a (get-in (req "/participant" :method :post :json {"name" "Ann"}) [:json "id"])
              b (get-in (req "/participant" :method :post :json {"name" "Bob"}) [:json "id"])]
          (is (= 200 (:status (req (str "/participant/" a "/friends") :method :post
                                   :json {"from" (str "/participant/" a) "to" (str "/participant/" b)}))))
          (is (= [(str "/participant/" a)] (map #(get % "to") (:json (req (str "/participant/" b "/friends"))))))
          (is (= 200 (:status (req (str "/participant/" a "/outbound") :method :post
                                   :json {"from" (str "/participant/" a) "occurred" "2026-11-22"
                                          "subject" "hello" "story" "scale profile works"}))))
          (is (= [(str "/participant/" a)]
                 (:json (tu/eventually 30000 #(seq (:json %)) #(req "/outbound?keywords=profile"))))
              "indexed by the background job")
          (is (= 1 (count (:json (tu/eventually 30000 #(seq (:json %)) #(req (str "/participant/" b "/inbound"))))))
              "fanned out to the friend")
          (is (= 200 (:status (req "/ready"))))
          (let [metrics (:body (req "/metrics"))]
            (is (re-find #"participants" metrics))
            (is (re-find #"cache_hits" metrics))))
        (finally (feed/stop! sys))))))))
