(ns herald.feed.openapi-test
  "Tests of /openapi.json over real HTTP: valid OpenAPI 3.1, a unique operationId on every route and the constraints
  the service enforces."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.openapi :as openapi]
            [herald.feed.routes :as routes]
            [herald.feed.test-util :as u]
            [herald.http.openapi :as http-openapi]))

(set! *warn-on-reflection* true)

;; herald.http's test helper (the official OAS 3.1 schema with networknt's validator), from http's source tree
(load-file "../http/src/test/clojure/herald/http/oas_check.clj")

(defn- table-operations [] (for [[path ops] routes/table [method _] ops] [path method]))

(defn- operations [doc]
  (for [[path methods] (get doc "paths") [method op] methods] [path method op]))

(deftest the-document-matches-the-service
  (let [sys (u/start-feed! nil)]
    (try
      (let [doc (:json (u/request (feed/url sys) "/openapi.json"))
            ops (operations doc)
            ids (map #(get (nth % 2) "operationId") ops)]
        (testing "every route is documented with an operationId, and the ids are unique (F3)"
          (is (= (count (table-operations)) (count ops)))
          (doseq [[path method] (table-operations)]
            (is (string? (get-in doc ["paths" (http-openapi/path path) (name method) "operationId"]))
                (str method " " path)))
          (is (= (count ids) (count (distinct ids))) (str "duplicates: " (pr-str (sort ids))))
          (is (every? #(re-matches #"[a-z][a-z0-9-]*" %) ids)))
        (testing "the constraints the service enforces are declared (F4)"
          (let [schemas (get-in doc ["components" "schemas"])
                limit (some #(when (= "limit" (get % "name")) %)
                            (get-in doc ["paths" "/participant/{id}/inbound" "get" "parameters"]))]
            (is (= 1000 (get-in limit ["schema" "maximum"])))
            (is (= 1 (get-in schemas ["NewParticipant" "properties" "name" "minLength"])))
            (is (re-matches (re-pattern (get-in schemas ["NewOutbound" "properties" "occurred" "pattern"]))
                            "2014-01-05T19:25:51.490Z"))
            (is (not (re-matches (re-pattern (get-in schemas ["NewOutbound" "properties" "occurred" "pattern"]))
                                 "yesterday")))
            (is (= ["string" "integer"] (map #(get % "type") (get-in schemas ["NewFriend" "properties" "to" "oneOf"]))))
            (is (get-in doc ["paths" "/ready" "get" "responses" "503"]))
            (is (get-in doc ["paths" "/participant" "post" "responses" "413" "content" "application/json"]))
            (is (nil? (get-in doc ["paths" "/participant" "post" "responses" "413" "content" "text/plain"]))
                "the server's own 413 is JSON too")))
        (testing "valid against the official OpenAPI 3.1 schema, as served (auth off) and with auth on"
          (is (= "3.1.0" (get doc "openapi")))
          (is (= [] (herald.http.oas-check/problems doc)))
          (is (= [] (herald.http.oas-check/problems (openapi/document routes/table "test" {:auth? true}))))))
      (finally (feed/stop! sys)))))
