(ns herald.feed.config-test
  "Tests of the EDN config reader: #env, #profile, #ref, errors naming the key, the bundled config."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.config :as config]))

(set! *warn-on-reflection* true)

(defn- read-str [s opts] (config/read-config s (assoc opts :string? true)))

(deftest env-tag-coerces-to-the-default-type
  (let [src "{:port #env [PORT 8080] :host #env [HOST \"0.0.0.0\"] :sync #env [SYNC true]
              :ratio #env [R 0.5] :mode #env [MODE :fast] :plain #env NAME}"]
    (is (= {:port 8080 :host "0.0.0.0" :sync true :ratio 0.5 :mode :fast :plain nil :profile :embedded}
           (read-str src {:env {}})))
    (is (= {:port 9000 :host "127.0.0.1" :sync false :ratio 0.25 :mode :slow :plain "x" :profile :embedded}
           (read-str src {:env {"PORT" "9000" "HOST" "127.0.0.1" "SYNC" "no" "R" "0.25" "MODE" ":slow" "NAME" "x"}})))
    (testing "a blank variable keeps the default"
      (is (= 8080 (:port (read-str src {:env {"PORT" "  "}})))))))

(deftest env-tag-errors-name-the-variable
  (let [e (try (read-str "{:port #env [PORT 8080]}" {:env {"PORT" "eighty"}}) (catch Exception e e))]
    (is (re-find #"PORT=\"eighty\"" (ex-message e)))
    (is (= {:type :herald.feed/config :env "PORT" :value "eighty"} (ex-data e)))))

(deftest profile-tag-picks-the-active-profile
  (let [src "{:profile #env [HERALD_PROFILE :embedded]
              :store #profile {:embedded {:type :embedded :dir #env [DATA_DIR \"data\"]} :memory {:type :memory}}
              :x #profile {:memory 1 :default 2}}"]
    (is (= {:type :embedded :dir "data"} (:store (read-str src {:env {}}))))
    (is (= {:type :embedded :dir "/d"} (:store (read-str src {:env {"DATA_DIR" "/d"}}))))
    (is (= {:type :memory} (:store (read-str src {:env {"HERALD_PROFILE" "memory"}}))))
    (is (= :memory (:profile (read-str src {:env {} :profile :memory}))) "the caller's profile wins")
    (is (= 1 (:x (read-str src {:env {} :profile :memory}))))
    (is (= 2 (:x (read-str src {:env {}}))) ":default applies to other profiles")
    (testing "an unknown profile fails naming the key (F11)"
      (doseq [opts [{:env {"HERALD_PROFILE" "memroy"}} {:env {} :profile :nope}]
              :let [e (try (read-str src opts) (catch Exception e e))]]
        (is (= :profile (:key (ex-data e))))
        (is (re-find #"unknown profile (memroy|nope): use embedded or memory" (str (ex-message e))))))))

(deftest ref-tag-links-values
  (is (= {:a {:b 5} :c 5 :d 5 :profile :embedded}
         (read-str "{:a {:b #env [B 5]} :c #ref [:a :b] :d #ref [:c]}" {:env {}})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"points at nothing"
                        (read-str "{:a #ref [:nope]}" {:env {}})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"cycle"
                        (read-str "{:a #ref [:b] :b #ref [:a]}" {:env {}}))))

(deftest config-never-evaluates-code
  (is (thrown? Exception (read-str "{:a #=(java.lang.System/exit 3)}" {:env {}})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"#env takes" (read-str "{:a #env {:x 1}}" {:env {}})))
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #"must be an EDN map" (read-str "[1 2]" {:env {}}))))

(deftest bundled-config-has-every-section
  (let [c (config/load-config nil {:env {}} nil)]
    (is (= :embedded (:profile c)))
    (is (= {:type :embedded :data-dir "data" :sync? false :search-max-lag-ms 1000} (:store c)))
    (is (= 8080 (get-in c [:http :port])))
    (is (= 10000 (get-in c [:fanout :drain-timeout-ms])) "#ref to the http shutdown timeout")
    (is (= [nil nil] [(get-in c [:fanout :runtime]) (get-in c [:perf :runtime])]) "herald.flow jobs are the only runtime")
    (is (= {:type :memory} (:store (config/load-config nil {:env {"HERALD_PROFILE" "memory"}} nil))))
    (is (= 1 (get-in (config/load-config nil {:env {"PORT" "1"}} {:http {:host "h"}}) [:http :port])))
    (is (= "h" (get-in (config/load-config nil {:env {}} {:http {:host "h"}}) [:http :host])))
    (is (nil? (get-in c [:http :unix-socket])) "no Unix socket unless UNIX_SOCKET is set")
    (is (= "/run/f.sock" (get-in (config/load-config nil {:env {"UNIX_SOCKET" "/run/f.sock"}} nil) [:http :unix-socket])))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"does not exist"
                          (config/load-config "/nonexistent/feed.edn" {} nil)))
    (is (thrown-with-msg? clojure.lang.ExceptionInfo #"is not a file"
                          (config/load-config (System/getProperty "java.io.tmpdir") {} nil))
        "a directory is a config error (exit 2), not an IOException")))

(deftest scale-profile-reads-its-servers-from-the-environment
  (let [c (config/load-config nil {:env {"HERALD_PROFILE" "scale"}} nil)]
    (is (= :scale (:profile c)))
    (is (= {:type :scale
            :graph {:type :postgres :jdbc-url "jdbc:postgresql://127.0.0.1:5432/herald" :user "herald" :password ""
                    :pool-size 10}
            :feeds {:type :cassandra :contact-points ["127.0.0.1:9042"] :keyspace "herald_feed"
                    :local-datacenter "datacenter1"}
            :search {:type :opensearch :url "http://127.0.0.1:9200" :index "herald-posts"}
            :cache {:type :redis :uri "redis://127.0.0.1:6379/0" :ttl-ms 600000}}
           (:store c))))
  (let [env {"HERALD_PROFILE" "scale" "PG_URL" "jdbc:postgresql://db:5433/feed" "PG_USER" "u" "PG_PASSWORD" "p"
             "REDIS_URI" "redis://cache:6380/2" "CASSANDRA_CONTACT_POINTS" " c1:9042, c2:9043 ,"
             "CASSANDRA_KEYSPACE" "ks" "CASSANDRA_DC" "dc2" "KAFKA_BOOTSTRAP" "k1:9092,k2:9092" "OPENSEARCH_URL" "https://search:9201"}
        s (:store (config/load-config nil {:env env} nil))]
    (is (= ["jdbc:postgresql://db:5433/feed" "u" "p"] ((juxt :jdbc-url :user :password) (:graph s))))
    (is (= ["c1:9042" "c2:9043"] (get-in s [:feeds :contact-points])) "a comma-separated list becomes a vector")
    (is (= ["ks" "dc2" nil] ((juxt :keyspace :local-datacenter :node-id) (:feeds s))) "no node id: post ids need none")
    (is (= {:type :kafka :bootstrap-servers "k1:9092,k2:9092"}
           (select-keys (:events (config/load-config nil {:env env} nil)) [:type :bootstrap-servers])))
    (is (= "https://search:9201" (get-in s [:search :url])))
    (is (= "redis://cache:6380/2" (get-in s [:cache :uri]))))
  (testing "a role can be put back in memory from the command line's overrides"
    (is (= :memory (get-in (config/load-config nil {:env {"HERALD_PROFILE" "scale"}} {:store {:feeds {:type :memory}}})
                           [:store :feeds :type])))))

(deftest one-of-names-the-key-and-the-choices
  (is (= :flow (config/check-one-of! [:fanout :runtime] :flow [:flow :executor])))
  (let [e (try (config/check-one-of! [:fanout :runtime] :flwo [:flow :executor]) (catch Exception e e))]
    (is (= {:type :herald.feed/config :key [:fanout :runtime] :value :flwo} (ex-data e)))
    (is (= ":fanout :runtime must be one of :flow, :executor, got :flwo" (ex-message e)))))

(defn- run-main
  "Runs the feed's main in a child JVM with `env` added (and `args`); [exit-code output], or nil if it did not exit
  in 120 s."
  [env & args]
  (let [java (str (java.io.File. (System/getProperty "java.home") "bin/java"))
        ^java.util.List cmd (into [java "-XX:TieredStopAtLevel=1" "-cp" (child-jvm/classpath)
                                   "herald.feed.Main" "--port" "0"] args)
        pb (doto (ProcessBuilder. cmd) (.redirectErrorStream true))
        _ (doseq [[k v] env] (.put (.environment pb) k v))
        p (.start pb)
        out (future (slurp (.getInputStream p)))]
    (if (.waitFor p 120 java.util.concurrent.TimeUnit/SECONDS)
      [(.exitValue p) @out]
      (do (.destroyForcibly p) nil))))

(deftest an-unknown-profile-stops-the-command-line
  ;; a typo in HERALD_PROFILE must not silently run the embedded store in ./data (F11)
  (let [[code out :as r] (run-main {"HERALD_PROFILE" "memroy"})]
    (is (some? r) "the feed started with an unknown profile")
    (is (= 2 code))
    (is (re-find #"unknown profile memroy: use embedded, memory or scale" (str out)))))

(deftest a-bad-component-option-is-a-usage-error
  ;; options checked when their component starts are config errors too: exit 2, not 1 (QA Q17)
  (let [[code out :as r] (run-main {"HERALD_PROFILE" "memory" "FANOUT_THREADS" "0"})]
    (is (some? r) "the feed started with a bad :fanout :threads")
    (is (= 2 code))
    (is (re-find #":fanout option :threads must be a positive integer" (str out)))))

(defn- temp-edn
  "A temporary .edn file holding `text`; its path."
  [text]
  (let [f (java.io.File/createTempFile "herald-overlay" ".edn")]
    (.deleteOnExit f)
    (spit f text)
    (str f)))

(deftest deep-merge-replaces-a-map-of-another-type
  (is (= {:s {:search {:type :memory} :graph {:type :postgres :url "u" :pool 2}}}
         (config/deep-merge {:s {:search {:type :opensearch :url "x"} :graph {:type :postgres :url "u" :pool 1}}}
                            {:s {:search {:type :memory} :graph {:type :postgres :pool 2}}})))
  (is (= {:a {:type :x :b 1 :c 2}} (config/deep-merge {:a {:type :x :b 1}} {:a {:c 2}})) "no :type: merged"))

(deftest an-overlay-file-is-merged-over-the-bundled-config
  (let [path (temp-edn ";; one role in memory, one option changed
                        {:store {:search {:type :memory}
                                 :cache #profile {:scale {:type :memory :max-size #env [CACHE_SIZE 10]} :default nil}}
                         :http {:port 9}
                         :fanout {:threads #ref [:http :port]}}")
        c (config/load-config nil {:env {"HERALD_PROFILE" "scale" "HERALD_CONFIG_OVERLAY" path "CACHE_SIZE" "20"}} nil)]
    (is (= {:type :memory} (get-in c [:store :search])) "the bundled :opensearch options are gone")
    (is (= {:type :memory :max-size 20} (get-in c [:store :cache])) "#profile and #env work in an overlay")
    (is (= :postgres (get-in c [:store :graph :type])) "the rest of the bundled config stays")
    (is (= "herald" (get-in c [:store :graph :user])))
    (is (= [9 "0.0.0.0"] [(get-in c [:http :port]) (get-in c [:http :host])]))
    (is (= 9 (get-in c [:fanout :threads])) "#ref points into the overlay")
    (is (= 1 (get-in (config/load-config nil {:env {"HERALD_PROFILE" "scale" "HERALD_CONFIG_OVERLAY" path}}
                                         {:http {:port 1}})
                     [:http :port]))
        "the caller's overrides win over the overlay"))
  (testing "overlay errors name the file or the key"
    (doseq [[text re k] [["{:profile :memory}" #"sets :profile" :profile]
                         ["[1 2]" #"must be an EDN map" :overlay]
                         ["{:a #=(+ 1 2)}" #"not valid EDN" :overlay]]
            :let [path (temp-edn text)
                  e (try (config/load-config nil {:env {"HERALD_CONFIG_OVERLAY" path}} nil) nil
                         (catch clojure.lang.ExceptionInfo e e))]]
      (is (= {:type :herald.feed/config :key k} (select-keys (ex-data e) [:type :key])) text)
      (is (re-find re (str (ex-message e))) text)
      (is (re-find (re-pattern (java.util.regex.Pattern/quote path)) (str (ex-message e))) "the message names the file"))
    (let [e (try (config/load-config nil {:env {"HERALD_CONFIG_OVERLAY" "/nonexistent/o.edn"}} nil) nil
                 (catch clojure.lang.ExceptionInfo e e))]
      (is (= "config overlay /nonexistent/o.edn does not exist" (ex-message e))))))

(deftest memory-roles-from-the-environment
  (let [c (config/load-config nil {:env {"HERALD_PROFILE" "scale" "HERALD_MEMORY_ROLES" " search, Cache "}} nil)]
    (is (= [{:type :memory} {:type :memory}] [(get-in c [:store :search]) (get-in c [:store :cache])]))
    (is (= [:postgres :cassandra] [(get-in c [:store :graph :type]) (get-in c [:store :feeds :type])])))
  (let [e (try (config/load-config nil {:env {"HERALD_PROFILE" "scale" "HERALD_MEMORY_ROLES" "serach"}} nil) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= {:type :herald.feed/config :key :memory-roles :env "HERALD_MEMORY_ROLES" :value "serach"} (ex-data e)))
    (is (= "HERALD_MEMORY_ROLES names an unknown role \"serach\": use cache, feeds, graph, search" (ex-message e))))
  (let [e (try (config/load-config nil {:env {"HERALD_MEMORY_ROLES" "search"}} nil) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (re-find #"applies to the :scale store's roles, but the store is :embedded" (str (ex-message e))))))

(deftest an-unknown-role-in-an-overlay-stops-the-command-line
  (let [path (temp-edn "{:store {:serach {:type :memory}}}")
        [code out :as r] (run-main {"HERALD_PROFILE" "scale" "HERALD_AUTH" "false"} "--config-overlay" path)]
    (is (some? r) "the feed started with an unknown role")
    (is (= 2 code) (str out))
    (is (re-find #"\[:serach\] is not a key of the :scale store \(did you mean :search\?\)" (str out)))))

;; session 11 (costs): the :scale profile's Kafka batching settings, bench/results/feed-scale.md
(deftest scale-kafka-batching-is-config-data
  (let [events #(:events (config/load-config nil {:env (merge {"HERALD_PROFILE" "scale"} %)} nil))]
    (is (= [5 1000] ((juxt :linger-ms :index-flush-ms) (events {}))) "the bundled :scale values")
    (is (= [1 500] ((juxt :linger-ms :index-flush-ms) (events {"KAFKA_LINGER_MS" "1" "INDEX_FLUSH_MS" "500"})))
        "each an environment override, coerced to a number")
    (is (= [nil nil] ((juxt :linger-ms :index-flush-ms)
                      (:events (config/load-config nil {:env {"HERALD_PROFILE" "embedded"}} nil))))
        "the other profiles' local log has neither")))
