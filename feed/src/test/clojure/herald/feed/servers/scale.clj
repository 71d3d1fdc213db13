(ns herald.feed.servers.scale
  "Every :scale role on its real test server (PostgreSQL, Cassandra, OpenSearch, Redis, and the Kafka broker): the
  role configs with a fresh schema, keyspace, index and prefix each, and the bundled :scale profile started on them."
  (:require [herald.feed :as feed]
            [herald.feed.servers.cassandra :as cass]
            [herald.flow.kafka-broker :as sk]
            [herald.feed.servers.opensearch :as osn]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.redis :as rd]
            [herald.feed.test-util :as tu]))

(set! *warn-on-reflection* true)

(def ^:private names (atom 0))

(defn- fresh [prefix] (str prefix (Long/toString (System/currentTimeMillis) 36) "_" (swap! names inc)))

(defn with-servers
  "(f {:graph :feeds :search :cache}) with the four role configs on the test servers (a fresh schema, keyspace and
  index named after `tag`, a fresh cache prefix), or a skip naming the server that is missing."
  ([f] (with-servers "full" f))
  ([tag f]
   (let [missing (or (some-> (:error (pg/info)) (str "PostgreSQL: "))
                     (when-not (sk/bootstrap) (str "Kafka: " (sk/failure)))
                     (some-> (:error (rd/info)) (str "Redis: "))
                     (some->> (osn/skip-reason) (str "OpenSearch: ")))]
     (if missing
       (clojure.test/do-report {:type :skip :message missing})
       (when-let [cp (cass/contact-point)]
         (f {:graph (assoc (pg/fresh-config) :type :postgres)
             :feeds {:type :cassandra :contact-points [cp] :keyspace (fresh tag) :request-timeout-ms 30000}
             :search {:type :opensearch :url (osn/url) :index (fresh (str tag "-")) :max-lag-ms 0}
             :cache (assoc (rd/fresh-config) :type :redis)}))))))

(defn start-feed!
  "Starts the feed's bundled :scale profile (auth off: the tests that start it are not about tokens) on the role
  configs of `with-servers`, on 127.0.0.1 and an ephemeral port; its data dir is a new temp dir named after `tag`.
  `extra`: more config keys (e.g. `{:events {...}}`), deep-merged over the profile."
  ([roles tag] (start-feed! roles tag nil))
  ([{:keys [graph feeds search cache]} tag extra]
  (feed/start! {:env {"HERALD_PROFILE" "scale" "PG_URL" (:jdbc-url graph) "PG_USER" (:user graph)
                      "PG_PASSWORD" (:password graph) "REDIS_URI" (:uri cache)
                      "CASSANDRA_CONTACT_POINTS" (first (:contact-points feeds)) "CASSANDRA_KEYSPACE" (:keyspace feeds)
                      "OPENSEARCH_URL" (:url search) "OPENSEARCH_INDEX" (:index search)
                      "KAFKA_BOOTSTRAP" (sk/bootstrap) "KAFKA_TOPIC_PREFIX" (str (:index search) "-")
                      "DATA_DIR" (tu/temp-dir (str "scale-" tag "-")) "HERALD_AUTH" "false"}
                :config (merge {:http {:port 0 :host "127.0.0.1"}
                                :store {:graph {:schema (:schema graph)}
                                        :cache {:prefix (:prefix cache)}}}
                               extra)})))
