(ns herald.http.openapi-test
  "herald.http.openapi/openapi: documents from routers validate against the official OAS 3.1 schema, every route once,
  metadata merged from parents, metadata mistakes as ex-info, a router serving its own document."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.http :as http]
            [herald.json :as json]
            [herald.http.oas-check :as oas]
            [herald.http.openapi :as openapi]
            [herald.http.router :as r]
            [herald.http.test-support :as ts]))

(set! *warn-on-reflection* true)

(defn- ok [_] {:status 200 :body "ok"})

(def ^:private info {:title "example" :version "1.0.0"})

(def ^:private components
  {:schemas {"Thing" {:type "object" :required ["id"] :properties {:id {:type "integer"} :note {:type ["string" "null"]}}}
             "Error" {:type "object" :properties {:error {:type "string"}}}}
   :securitySchemes {"bearer" {:type "http" :scheme "bearer"}}})

(def ^:private json-thing {"application/json" {"$ref" "#/components/schemas/Thing"}})

(def routes
  [["/things" {:get {:handler ok :summary "List things" :operation-id "things-list"
                     :parameters [{:in :query :name :limit :schema {:type "integer" :minimum 1} :required false}]
                     :responses {200 {:content {"application/json" {:type "array" :items {"$ref" "#/components/schemas/Thing"}}}
                                      :headers {"Link" {:schema {:type "string"} :description "next page"}}}}}
               :post {:handler ok :operation-id "things-create" :request {:content json-thing :required true}
                      :responses {201 {:content json-thing} 400 {:content {"application/json" {"$ref" "#/components/schemas/Error"}}}}}}]
   ["/things/:id" {:tags ["things"]
                   :parameters [{:in :path :name :id :schema {:type "integer" :minimum 1} :description "the thing's id"}]
                   :responses {404 {:description "no such thing"}}
                   :get {:handler ok :operation-id "thing-get" :responses {200 {:content json-thing}}}
                   :delete {:handler ok :operation-id "thing-delete" :deprecated true :security [{"bearer" []}]
                            :responses {204 {}}}}
    ["/notes/:note" {:get ok :summary "One note" :tags ["notes"]}]]
   ["/files/*path" {:get ok :head ok :options ok :summary "A file"}]
   ["/anything" {:any ok :operation-id "anything" :post {:handler ok :operation-id "anything-create"}}]
   ["/dav" {:propfind ok}]
   ["/caf%C3%A9/{x}" {:get ok}]
   ["/" {:get ok}]])

(defn- ops [doc] (for [[p item] (:paths doc) [m op] item] [p m op]))

(deftest a-document-from-a-router-validates
  (let [doc (openapi/openapi (r/router routes) {:info info :components components
                                                :servers [{:url "https://api.example"}]})]
    (testing "valid against the official OpenAPI 3.1 schema (Schema Objects included)"
      (is (= [] (oas/problems doc)))
      (is (= "3.1.0" (:openapi doc))))
    (testing "every route with an OpenAPI method is one path, in declaration order; /dav (PROPFIND only) is not"
      (is (= ["/things" "/things/{id}" "/things/{id}/notes/{note}" "/files/{path}" "/anything" "/caf%C3%A9/%7Bx%7D" "/"]
             (keys (:paths doc))))
      (is (= (count (keys (:paths doc))) (count (distinct (keys (:paths doc)))))))
    (testing "methods: HEAD and OPTIONS only when the route has its own handler; :any as the methods it stands for"
      (is (= [:get :options :head] (keys (get-in doc [:paths "/files/{path}"]))))
      (is (= [:get :delete] (keys (get-in doc [:paths "/things/{id}"]))))
      (is (= [:get :put :post :delete :patch] (keys (get-in doc [:paths "/anything"]))))
      (is (= ["anything-get" "anything-put" "anything-create" "anything-delete" "anything-patch"]
             (map :operationId (vals (get-in doc [:paths "/anything"]))))))
    (testing "path parameters: declared ones kept, the rest derived from the template"
      (is (= [{:name "id" :in "path" :required true :schema {:type "integer" :minimum 1} :description "the thing's id"}
              {:name "note" :in "path" :required true :schema {:type "string" :minLength 1}}]
             (sort-by :name (get-in doc [:paths "/things/{id}/notes/{note}" :get :parameters]))))
      (is (= "path" (get-in doc [:paths "/files/{path}" :get :parameters 0 :in]))))
    (testing "a parent's tags, parameters and responses reach its children; a method's own keys win"
      (let [note (get-in doc [:paths "/things/{id}/notes/{note}" :get])
            del (get-in doc [:paths "/things/{id}" :delete])]
        (is (= ["things" "notes"] (:tags note)))
        (is (= "no such thing" (get-in note [:responses "404" :description])))
        (is (= #{"204" "404"} (set (keys (:responses del)))))
        (is (= "No Content" (get-in del [:responses "204" :description])) "the reason phrase by default")
        (is (true? (:deprecated del)))
        (is (= [{"bearer" []}] (:security del)))))
    (testing "request bodies and response content as media types"
      (is (= {:required true :content {"application/json" {:schema {"$ref" "#/components/schemas/Thing"}}}}
             (get-in doc [:paths "/things" :post :requestBody])))
      (is (= {:schema {:type "string"} :description "next page"}
             (get-in doc [:paths "/things" :get :responses "200" :headers "Link"]))))
    (testing "route data gives the same document as the router built from it"
      (is (= doc (openapi/openapi routes {:info info :components components :servers [{:url "https://api.example"}]}))))))

(deftest the-validator-is-real
  (let [doc (openapi/openapi routes {:info info :components components})]
    (is (seq (oas/problems (assoc-in doc [:paths "/things" :get :responses "200" :content "application/json" :schema :type] 5)))
        "a Schema Object with a bad type")
    (is (seq (oas/problems (update-in doc [:paths "/things" :post :responses "201"] dissoc :description))))
    (is (seq (oas/problems (assoc doc :openapi "3.0.3"))))))

(defn- thrown-data [f] (try (f) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest metadata-mistakes-are-ex-info
  (testing "an unknown key: refused by the router and by openapi, naming the key and the route"
    (doseq [data [[["/a" {:get ok :sumary "typo"}]]
                  [["/a" {:get {:handler ok :operationId "camel"}}]]]]
      (is (= :herald.http/malformed-route (:type (thrown-data #(r/router data)))))
      (let [d (thrown-data #(openapi/openapi data {:info info}))]
        (is (= :herald.http/malformed-route (:type d)))
        (is (= "/a" (:route d)))
        (is (#{:sumary :operationId} (:key d))))))
  (testing "a qualified key is the application's own: kept and ignored"
    (is (= {:get {}} (get-in (openapi/openapi [["/a" {:get ok ::perf :x}]] {:info info}) [:paths "/a"]))))
  (testing "bad values and unknown keys inside documentation"
    (doseq [[data k] [[[["/a/:id" {:get ok :parameters [{:in :path :name :id :schme {}}]}]] :schme]
                      [[["/a/:id" {:get ok :parameters [{:in :path :name :other :schema {}}]}]] :parameters]
                      [[["/a" {:get ok :parameters [{:in :body :name :x :schema {}}]}]] :parameters]
                      [[["/a" {:get ok :tags "one"}]] :tags]
                      [[["/a" {:get ok :responses {700 {}}}]] :responses]
                      [[["/a" {:get ok :responses {200 {:content {"text/plain" "string"}}}}]] :responses]
                      [[["/a" {:get ok :responses {200 {:desc "x"}}}]] :desc]
                      [[["/a" {:post {:handler ok :request {:schema {}}}}]] :schema]
                      [[["/a" {:get ok :deprecated "yes"}]] :deprecated]]]
      (let [d (thrown-data #(openapi/openapi data {:info info}))]
        (is (= :herald.http/invalid-openapi (:type d)) (pr-str data))
        (is (= k (:key d)) (pr-str data))
        (is (= (ffirst data) (:route d)) (pr-str data)))))
  (testing "one operationId on two operations"
    (let [d (thrown-data #(openapi/openapi [["/a" {:get ok :post ok :operation-id "a"}]] {:info info}))]
      (is (= {:type :herald.http/invalid-openapi :key :operation-id :operation-id "a"
              :operations [[:get "/a"] [:post "/a"]]}
             d))))
  (testing "two routes that are one OpenAPI path"
    (is (= ["/a/{x}" "/a/{y}"] (:routes (thrown-data #(openapi/openapi [["/a/:x" {:get ok}] ["/a/*y" {:get ok}]] {:info info}))))))
  (testing "options"
    (is (= {:type :herald.http/invalid-option :key :info} (thrown-data #(openapi/openapi routes {}))))
    (is (= :herald.http/invalid-option (:type (thrown-data #(openapi/openapi routes {:info {:title "x"}})))))
    (is (= :bogus (:key (thrown-data #(openapi/openapi routes {:info info :bogus 1})))))))

(defn- request
  "One request with a 30 s read timeout: a cold server's first answer took 3.5 s on a machine at load 40."
  [port method uri]
  (let [c (ts/open port 30000)]
    (try (ts/write! c (ts/request-text method uri {})) (ts/read-response c) (finally (ts/close! c)))))

(deftest the-router-still-routes-and-serves-its-own-document
  (let [app (atom nil)
        table (conj routes ["/openapi.json" {:get {:handler (fn [_] {:status 200 :headers {"content-type" "application/json"}
                                                                     :body (json/write-str (openapi/openapi @app {:info info :components components}))})
                                                   :summary "This document" :operation-id "openapi"}}])]
    (reset! app (r/router table))
    (ts/with-server [srv @app {}]
      (let [resp (request (ts/port srv) "GET" "/openapi.json")
            doc (json/read (:body resp))]
        (is (= 200 (:status resp)))
        (is (= [] (oas/problems doc)))
        (is (= "openapi" (get-in doc ["paths" "/openapi.json" "get" "operationId"])))
        (is (= 200 (:status (request (ts/port srv) "GET" "/things/7/notes/x"))))
        (is (= 405 (:status (request (ts/port srv) "DELETE" "/files/a"))))
        (is (= 404 (:status (request (ts/port srv) "GET" "/dav/x"))))))))

;; any route table: the document validates and lists each route once, with exactly its OpenAPI methods

(def ^:private gen-template
  (gen/fmap (fn [segs] (str "/" (str/join "/" (map-indexed (fn [i s] (if (= :param s) (str ":p" i) s)) segs))))
            (gen/vector (gen/elements ["a" "b" "c" :param]) 0 4)))

(def ^:private gen-table
  "Route data without duplicate templates (a parameter's name is its position, so equal shapes are equal strings)."
  (gen/fmap (fn [pairs]
              (let [seen (volatile! #{})]
                (vec (for [[t ms] pairs :when (not (@seen t))]
                       (do (vswap! seen conj t) [t (zipmap ms (repeat ok))])))))
            (gen/vector (gen/tuple gen-template (gen/not-empty (gen/set (gen/elements [:get :post :put :delete :patch :head]))))
                        1 12)))

(defspec every-route-once-in-a-valid-document 20
  (prop/for-all [table gen-table]
    (let [doc (openapi/openapi (r/router table) {:info info})]
      (and (empty? (oas/problems doc))
           (= (map (comp openapi/path first) table) (keys (:paths doc)))
           (every? (fn [{:keys [path methods]}] (= methods (set (keys (get-in doc [:paths (openapi/path path)])))))
                   (r/routes table))))))
