(ns herald.feed.openapi
  "The OpenAPI 3.0 document of the feed's HTTP API, generated from the route table so that every route is described."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(def ^:private link-schema
  {:type "string" :pattern "^/participant/[0-9]+$" :example "/participant/7"})

(def schemas
  "The component schemas of the API's bodies."
  {"Error" {:type "object" :required ["error"]
            :properties {:error {:type "string" :description "what is wrong"}
                         :field {:type "string" :description "the request field or parameter at fault"}
                         :value {:description "the offending value"}}}
   "NewParticipant" {:type "object" :required ["name"]
                     :properties {:name {:type "string" :maxLength 200}}}
   "Participant" {:type "object" :required ["id" "name" "link"]
                  :properties {:id {:type "integer" :format "int64"} :name {:type "string"} :link link-schema}}
   "NewFriend" {:type "object" :required ["to"]
                :properties {:from (assoc link-schema :description "defaults to the participant of the path")
                             :to link-schema}}
   "Friend" {:type "object" :required ["id" "from" "to"]
             :properties {:id {:type "integer" :format "int64"} :from link-schema :to link-schema}}
   "NewOutbound" {:type "object" :required ["subject" "story"]
                  :properties {:from (assoc link-schema :description "defaults to the participant of the path")
                               :occurred {:type "string" :example "2026-11-22"
                                          :description "yyyy-MM-dd, optionally with an ISO-8601 time; echoed as posted; defaults to today (UTC)"}
                               :subject {:type "string"} :story {:type "string"}}}
   "Outbound" {:type "object" :required ["from" "occurred" "subject" "story"]
               :properties {:from link-schema :occurred {:type "string"} :subject {:type "string"} :story {:type "string"}}}
   "Inbound" {:type "object" :required ["from" "to" "occurred" "subject" "story"]
              :properties {:from link-schema :to link-schema :occurred {:type "string"}
                           :subject {:type "string"} :story {:type "string"}}}
   "PerfMinute" {:type "object"
                 :properties {:minute {:type "string" :format "date-time"} :entity {:type "string"}
                              :operation {:type "string"} :count {:type "integer"}
                              :median_ms {:type "number"} :p95_ms {:type "number"} :p99_ms {:type "number"}
                              :max_ms {:type "number"} :errors {:type "integer"} :closed {:type "boolean"}}}})

(defn- ref-schema [n] {"$ref" (str "#/components/schemas/" n)})

(defn- content [schema]
  {"application/json" {:schema schema}})

(def ^:private parameters
  {:id {:name "id" :in "path" :required true :schema {:type "integer" :format "int64" :minimum 1}
        :description "participant id"}
   :limit {:name "limit" :in "query" :required false :schema {:type "integer" :minimum 1}
           :description "page size (default 50, at most 1000; search: default 100)"}
   :before {:name "before" :in "query" :required false :schema {:type "string"}
            :description "opaque cursor from the previous page's Link rel=\"next\" header"}
   :keywords {:name "keywords" :in "query" :required true :schema {:type "string"}
              :description "words that must all occur in a post's subject or story"}
   :from {:name "from" :in "query" :required false :schema {:type "string"}
          :description "start: epoch millis, ISO-8601 instant, UTC date-time or date"}
   :to {:name "to" :in "query" :required false :schema {:type "string"} :description "end, as from"}})

(defn- error-responses [codes]
  (into {} (for [c codes]
             [(str c) {:description (case (long c) 400 "bad input, the field named" 404 "unknown participant"
                                          413 "body too large" 415 "unsupported Content-Type" "error")
                       :content (content (ref-schema "Error"))}])))

(defn- response-of [{:keys [response response-type]}]
  (case response-type
    :text {:description "OK" :content {"text/plain" {:schema {:type "string"}}}}
    {:description "OK" :content (content (cond (string? response) (ref-schema response)
                                               (vector? response) {:type "array" :items (ref-schema (first response))}
                                               :else (or response {:type "object"})))}))

(defn- body-of [schema-name]
  {:required true
   :content {"application/json" {:schema (ref-schema schema-name)}
             "application/x-www-form-urlencoded" {:schema (ref-schema schema-name)}}})

(defn- operation [{:keys [summary params body errors entity op link?] :as route}]
  (cond-> {:summary summary
           :operationId (str (name (or entity :ops)) "-" (name (or op (:method route))))
           :responses (merge {"200" (cond-> (response-of route)
                                      link? (assoc :headers {"Link" {:schema {:type "string"}
                                                                     :description "<...?limit=n&before=cursor>; rel=\"next\" when older items remain"}}))}
                             (error-responses errors))}
    (seq params) (assoc :parameters (mapv parameters params))
    body (assoc :requestBody (body-of body))))

(defn openapi-path
  "The OpenAPI form of a router path: /participant/:id -> /participant/{id}."
  [path]
  (str/replace path #":([A-Za-z][A-Za-z0-9_-]*)" "{$1}"))

(defn document
  "The OpenAPI 3.0.3 document (a Clojure map ready for JSON) of `routes`, a seq of route specs
  {:path :method :summary :params [..] :body schema-name :response schema-name-or-[name] :errors [..]}."
  [routes version]
  {:openapi "3.0.3"
   :info {:title "herald.feed" :version version
          :description "The news feed service: the reference contract plus paging, health, metrics and performance figures."}
   :paths (reduce (fn [paths {:keys [path method] :as route}]
                    (assoc-in paths [(openapi-path path) (name method)] (operation route)))
                  (sorted-map) routes)
   :components {:schemas schemas}})
