(ns herald.feed.store.scale.roles-test
  "The :scale store's config refuses what it does not know: an unknown key, a role left out, an option a role in
  memory does not take; each error names the key. Putting roles in memory is explicit."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.config :as config]
            [herald.feed.store :as s]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.scale.roles :as roles]))

(set! *warn-on-reflection* true)

(defn- open-error
  "The ex-info opening a :scale store on config throws (nil when it opens)."
  [config]
  (try (s/close-store! (s/open-store (assoc config :type :scale))) nil
       (catch clojure.lang.ExceptionInfo e e)))

(deftest an-unknown-key-is-an-error-naming-it
  (let [e (open-error (assoc roles/all-in-memory :serach {:type :memory}))]
    (is (= {:type ::s/invalid :key [:serach]} (select-keys (ex-data e) [:type :key])))
    (is (re-find #"\[:serach\] is not a key of the :scale store \(did you mean :search\?\)" (ex-message e))
        (ex-message e)))
  (let [e (open-error (assoc roles/all-in-memory :index-mark :x))]
    (is (= [:index-mark] (:key (ex-data e))))
    (is (re-find #":index-mark-ms" (ex-message e)) "the message lists the store's options")))

(deftest a-role-left-out-is-an-error-naming-it
  (doseq [r roles/role-keys]
    (testing r
      (let [e (open-error (dissoc roles/all-in-memory r))]
        (is (= {:type ::s/invalid :key [r]} (select-keys (ex-data e) [:type :key])))
        (is (re-find (re-pattern (str "store config \\[" r "\\] must be a map with a :type: every role needs a backend"))
                     (ex-message e)))
        (is (re-find #"\{:type :memory\} to keep" (ex-message e)) "the message says how to put it in memory")))))

(deftest a-role-needs-a-known-type-and-no-stray-options
  (doseq [[config k] [[{:search {:url "http://x"}} [:search :type]]
                      [{:search {:type :elastic}} [:search :type]]
                      [{:graph "postgres"} [:graph]]
                      [{:search {:type :memory :url "http://127.0.0.1:9200"}} [:search :url]]
                      [{:cache {:type :memory :uri "redis://x"}} [:cache :uri]]]]
    (let [e (open-error (merge roles/all-in-memory config))]
      (is (= {:type ::s/invalid :key k} (select-keys (ex-data e) [:type :key])) (pr-str config))
      (is (re-find (re-pattern (java.util.regex.Pattern/quote (pr-str k))) (str (ex-message e)))))))

(deftest roles-in-memory-are-explicit
  (is (nil? (open-error roles/all-in-memory)))
  (is (nil? (open-error (merge roles/all-in-memory {:cache {:type :memory :max-size 0}}))) "no cache")
  (testing "the bundled :scale config with HERALD_MEMORY_ROLES naming every role opens in memory"
    (let [cfg (config/load-config nil {:env {"HERALD_PROFILE" "scale" "HERALD_MEMORY_ROLES" "graph,feeds,search,cache"}} nil)
          st (s/open-store (:store cfg))]
      (try (is (= {:id 1 :name "Ann"} (graph/create-participant! st "Ann")))
           (finally (s/close-store! st))))))
