(ns herald.feed.openapi
  "The OpenAPI 3.0 document of the feed's HTTP API, generated from the route table so that every route is described."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(def ^:private link-schema
  {:type "string" :pattern "^/participant/[0-9]+$" :example "/participant/7"})

(def ^:private ref-in-schema
  "A participant as the service accepts it in a body: a link, a bare id string or an integer id."
  {:oneOf [{:type "string" :pattern "^((https?://[^/?#\\s]+)?/participant/)?[0-9]+$" :example "/participant/7"}
           {:type "integer" :format "int64" :minimum 1}]})

(def ^:private occurred-schema
  {:type "string" :example "2026-11-22"
   :pattern "^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?)?$"
   :description "yyyy-MM-dd, optionally followed by an ISO-8601 time (T or a space, then HH:mm[:ss[.fraction]][Z|+hh:mm]); echoed as posted; defaults to today (UTC)"})

(def ^:private post-id-schema {:type "integer" :format "int64" :minimum 1 :description "the post's id"})

(def ^:private post-link-schema
  {:type "string" :pattern "^/participant/[0-9]+/outbound/[0-9]+$" :example "/participant/7/outbound/42"
   :description "the post's link: GET, PATCH and DELETE it"})

(def ^:private dashboard-schema
  (let [n {:type "number" :nullable true}
        i {:type "integer" :nullable true}
        lag {:type "object" :properties {:posts i :reason {:type "string" :description "why there is no figure"}}}]
    {:type "object" :description "herald.feed.dashboard/snapshot: the last :dashboard :minutes minutes, the current one partly"
     :properties {:now {:type "string" :format "date-time"} :now_ms {:type "integer"}
                  :current {:type "object" :properties {:minute {:type "string"} :elapsed_s {:type "number"}}}
                  :window {:type "object"}
                  :scope {:type "string" :enum ["instance" "cluster"]}
                  :instance {:type "object"} :instances {:type "array" :items {:type "object"}}
                  :series {:type "array"
                           :items {:type "object"
                                   :properties {:entity {:type "string"} :operation {:type "string"}
                                                :points {:type "array"
                                                         :items {:type "object"
                                                                 :properties {:minute {:type "string"} :count {:type "integer"}
                                                                              :rate n :p50 n :p95 n :p99 n :max n
                                                                              :errors {:type "integer"} :e4xx i :e5xx i
                                                                              :closed {:type "boolean"}}}}}}}
                  :totals {:type "array" :items {:type "object"}}
                  :lags {:type "object" :properties {:fanout lag :search lag :scope {:type "string"}}}}}))

(def schemas
  "The component schemas of the API's bodies."
  {"Error" {:type "object" :required ["error"]
            :properties {:error {:type "string" :description "what is wrong"}
                         :field {:type "string" :description "the request field or parameter at fault"}
                         :value {:description "the offending value"}}}
   "NewParticipant" {:type "object" :required ["name"]
                     :properties {:name {:type "string" :minLength 1 :maxLength 200
                                         :description "not blank"}}}
   "Participant" {:type "object" :required ["id" "name" "link"]
                  :properties {:id {:type "integer" :format "int64"} :name {:type "string"} :link link-schema}}
   "NewFriend" {:type "object" :required ["to"]
                :description "the participant of the path must be `from` or `to`"
                :properties {:from (assoc ref-in-schema :description "defaults to the participant of the path")
                             :to ref-in-schema}}
   "Friend" {:type "object" :required ["id" "from" "to"]
             :properties {:id {:type "integer" :format "int64"} :from link-schema :to link-schema}}
   "NewOutbound" {:type "object" :required ["subject" "story"]
                  :properties {:from (assoc ref-in-schema :description "must be the participant of the path (the default)")
                               :occurred occurred-schema
                               :subject {:type "string"} :story {:type "string"}}}
   "Outbound" {:type "object" :required ["from" "occurred" "subject" "story" "id" "link"]
               :properties {:from link-schema :occurred {:type "string"} :subject {:type "string"} :story {:type "string"}
                            :id post-id-schema :link post-link-schema}}
   "Inbound" {:type "object" :required ["from" "to" "occurred" "subject" "story" "id" "link"]
              :properties {:from link-schema :to link-schema :occurred {:type "string"}
                           :subject {:type "string"} :story {:type "string"}
                           :id post-id-schema :link post-link-schema}}
   "OutboundEdit" {:type "object" :minProperties 1
                   :description "the fields to change, one or both; other keys are ignored"
                   :properties {:subject {:type "string" :maxLength 1000} :story {:type "string" :maxLength 100000}}}
   "NewRelation" {:type "object" :required ["target"]
                  :description "a mute or a block of `target` by the participant of the path (not itself)"
                  :properties {:target ref-in-schema}}
   "Relation" {:type "object" :required ["from" "target"]
               :description "a mute or a block: `from` (the participant of the path) mutes or blocks `target`"
               :properties {:from link-schema :target link-schema}}
   "PerfMinute" {:type "object"
                 :properties {:minute {:type "string" :format "date-time"} :entity {:type "string"}
                              :operation {:type "string"} :count {:type "integer"}
                              :median_ms {:type "number"} :p95_ms {:type "number"} :p99_ms {:type "number"}
                              :max_ms {:type "number"} :errors {:type "integer"} :closed {:type "boolean"}}}
   "Dashboard" dashboard-schema})

(defn- ref-schema [n] {"$ref" (str "#/components/schemas/" n)})

(defn- content [schema]
  {"application/json" {:schema schema}})

(def ^:private parameters
  {:id {:name "id" :in "path" :required true :schema {:type "integer" :format "int64" :minimum 1}
        :description "participant id"}
   :postId {:name "postId" :in "path" :required true :schema {:type "integer" :format "int64" :minimum 1}
            :description "post id (the `id` of a post item)"}
   :otherId {:name "otherId" :in "path" :required true :schema {:type "integer" :format "int64" :minimum 1}
           :description "the other participant's id (otherId)"}
   :limit {:name "limit" :in "query" :required false :schema {:type "integer" :minimum 1 :maximum 1000}
           :description "page size (default 50; search: default 100); an empty value is a 400"}
   :before {:name "before" :in "query" :required false
            :schema {:type "string" :minLength 3 :maxLength 26 :pattern "^(0|[1-9a-z][0-9a-z]*)\\.[1-9a-z][0-9a-z]*$"}
            :description (str "opaque cursor from the previous page's Link rel=\"next\" header; anything else, or a cursor"
                              " beyond the stores' bounds, is a 400")}
   :keywords {:name "keywords" :in "query" :required true :schema {:type "string"}
              :description "words that must all occur in a post's subject or story"}
   :viewer {:name "viewer" :in "query" :required false :schema {:type "string" :example "/participant/7"}
            :description (str "the searcher (a participant link or id): the posts of those it mutes or blocks, or who block"
                              " it, are left out. With auth on the searcher is the bearer token's participant (optional"
                              " on search), and `viewer`, when sent, must be that participant")}
   :from {:name "from" :in "query" :required false
          :schema {:type "string" :pattern "^([0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}.*)?)$"}
          :description "start: epoch millis, ISO-8601 instant, UTC date-time or date"}
   :to {:name "to" :in "query" :required false
        :schema {:type "string" :pattern "^([0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}.*)?)$"}
        :description "end, as from (a date means the end of that day); not before from"}
   :file {:name "file" :in "path" :required true :schema {:type "string" :enum ["dashboard.js" "dashboard.css" "favicon.svg"]}
          :description "the asset's name"}
   :v {:name "v" :in "query" :required false :schema {:type "string"}
       :description "the asset's content hash (as the page links it): cached for a year when it matches"}})

(defn- error-responses [codes]
  (into {} (for [c codes]
             [(str c) (case (long c)
                        413 {:description "body too large: a JSON Error (above the feed's limit or the server's hard cap)"
                             :content (content (ref-schema "Error"))}
                        503 {:description "not ready: the store is closed or the service is draining"
                             :content (content {:type "object"})}
                        {:description (case (long c) 400 "bad input, the field named" 404 "unknown participant (or post)"
                                            409 "conflict: a block between the two participants (unblock first)"
                                            401 "with auth on: no bearer token, or one that does not verify (WWW-Authenticate: Bearer)"
                                            403 "with auth on: the token's participant is not the path's"
                                            415 "unsupported Content-Type" "error")
                         :content (content (ref-schema "Error"))})])))

(defn- response-of [{:keys [response response-type response-content]}]
  (case (if response-content :content response-type)
    :content {:description "OK" :content response-content}
    :text {:description "OK" :content {"text/plain" {:schema {:type "string"}}}}
    :none {:description "No Content"}
    {:description "OK" :content (content (cond (string? response) (ref-schema response)
                                               (vector? response) {:type "array" :items (ref-schema (first response))}
                                               :else (or response {:type "object"})))}))

(defn- body-of [schema-name]
  {:required true
   :content {"application/json" {:schema (ref-schema schema-name)}
             "application/x-www-form-urlencoded" {:schema (ref-schema schema-name)}}})

(defn operation-id
  "The route's unique operationId: entity-op for the contract (outbound-search), else the path's
  words and the method (perf-log-get, openapi-get)."
  [{:keys [entity op path method]}]
  (if entity
    (str (name entity) "-" (name op))
    (str (str/join "-" (re-seq #"[A-Za-z0-9]+" (str/replace path #"\.json$" ""))) "-" (name method))))

(def security-schemes
  "The bearer token scheme of routes marked `:auth :self` (herald.feed.auth; required only when auth is on)."
  {"bearerAuth" {:type "http" :scheme "bearer" :bearerFormat "JWT"
                 :description (str "A JWT whose subject (sub) is the participant id: HS256 with the service's secret, or"
                                   " RS256/ES256 with a key of its JWK set. Needed only when the service runs with auth on"
                                   " (the :scale profile's default; `make run` keeps it off).")}})

(defn- operation [auth-on? {:keys [summary params body errors entity op link? auth] :as route}]
  (cond-> {:summary summary
           :operationId (operation-id route)
           :responses (merge {(if (= :none (:response-type route)) "204" "200") (cond-> (response-of route)
                                      link? (assoc :headers {"Link" {:schema {:type "string"}
                                                                     :description "<...?limit=n&before=cursor>; rel=\"next\" when older items remain"}}))}
                             (error-responses (cond-> (vec errors) auth (into [401 403])))
                             (into {} (for [[c d] (:error-docs route)] [(str c) {:description d :content (content (ref-schema "Error"))}])))}
    (seq params) (assoc :parameters (mapv parameters params))
    body (assoc :requestBody (body-of body))
    ;; auth on: only the path's participant, with a token; auth off: anyone ({} is "no requirement")
    auth (assoc :security (if auth-on? [{"bearerAuth" []}] [{} {"bearerAuth" []}]))))

(defn openapi-path
  "The OpenAPI form of a router path: /participant/:id -> /participant/{id}."
  [path]
  (str/replace path #":([A-Za-z][A-Za-z0-9_-]*)" "{$1}"))

(defn document
  "The OpenAPI 3.0.3 document (a Clojure map ready for JSON) of `routes`, a seq of route specs
  {:path :method :summary :params [..] :body schema-name :response schema-name-or-[name] :errors [..] :auth}.
  `:auth?` says whether the service runs with auth on: the `:auth :self` operations then require the bearer
  scheme, else it is optional (ignored)."
  ([routes version] (document routes version {}))
  ([routes version {:keys [auth?]}]
  {:openapi "3.0.3"
   :info {:title "herald.feed" :version version
          :description "The news feed service: the reference contract plus paging, health, metrics and performance figures."}
   :paths (reduce (fn [paths {:keys [path method] :as route}]
                    (assoc-in paths [(openapi-path path) (name method)] (operation (boolean auth?) route)))
                  (sorted-map) routes)
   :components {:schemas schemas :securitySchemes security-schemes}}))
