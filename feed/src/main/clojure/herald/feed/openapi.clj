(ns herald.feed.openapi
  "The feed's OpenAPI facts: its component schemas, the pieces its route table's documentation is made of, and the
  document herald.http.openapi/openapi builds from that table."
  (:require [herald.http.openapi :as openapi]))

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
  (let [n {:type ["number" "null"]}
        i {:type ["integer" "null"]}
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

(defn- json-content [schema] {"application/json" schema})

(def ^:private parameter-table
  {:id {:in :path :name "id" :required true :schema {:type "integer" :format "int64" :minimum 1}
        :description "participant id"}
   :postId {:in :path :name "postId" :required true :schema {:type "integer" :format "int64" :minimum 1}
            :description "post id (the `id` of a post item)"}
   :otherId {:in :path :name "otherId" :required true :schema {:type "integer" :format "int64" :minimum 1}
             :description "the other participant's id (otherId)"}
   :limit {:in :query :name "limit" :required false :schema {:type "integer" :minimum 1 :maximum 1000}
           :description "page size (default 50; search: default 100); an empty value is a 400"}
   :before {:in :query :name "before" :required false
            :schema {:type "string" :minLength 3 :maxLength 26 :pattern "^(0|[1-9a-z][0-9a-z]*)\\.[1-9a-z][0-9a-z]*$"}
            :description (str "opaque cursor from the previous page's Link rel=\"next\" header; anything else, or a cursor"
                              " beyond the stores' bounds, is a 400")}
   :keywords {:in :query :name "keywords" :required true :schema {:type "string"}
              :description "words that must all occur in a post's subject or story"}
   :viewer {:in :query :name "viewer" :required false :schema {:type "string" :example "/participant/7"}
            :description (str "the searcher (a participant link or id): the posts of those it mutes or blocks, or who block"
                              " it, are left out. With auth on the searcher is the bearer token's participant (optional"
                              " on search), and `viewer`, when sent, must be that participant")}
   :from {:in :query :name "from" :required false
          :schema {:type "string" :pattern "^([0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}.*)?)$"}
          :description "start: epoch millis, ISO-8601 instant, UTC date-time or date"}
   :to {:in :query :name "to" :required false
        :schema {:type "string" :pattern "^([0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}.*)?)$"}
        :description "end, as from (a date means the end of that day); not before from"}
   :file {:in :path :name "file" :required true :schema {:type "string" :enum ["dashboard.js" "dashboard.css" "favicon.svg"]}
          :description "the asset's name"}
   :idempotency-key {:in :header :name "Idempotency-Key" :required false
                     :schema {:type "string" :minLength 1 :maxLength 255 :pattern "^[\\x21-\\x2b\\x2d-\\x7e]{1,255}$"
                              :example "3f2b9c1e-post-1"}
                     :description (str "makes a retried post safe: a repeat with the same key and the same fields"
                                       " answers the first post (same id and link) and records no second one, also"
                                       " when the first attempt failed; the same key with other fields is a 422."
                                       " Scoped to the participant; one value of 1-255 visible ASCII characters other than ',' (else a 400); kept"
                                       " 24 h (`:feed :idempotency-key-ttl-ms`)")}
   :v {:in :query :name "v" :required false :schema {:type "string"}
       :description "the asset's content hash (as the page links it): cached for a year when it matches"}})

(defn params
  "The route data `:parameters` of the feed's parameters named `ks` (:id :postId :otherId :limit :before :keywords
  :viewer :from :to :file :v :idempotency-key)."
  [& ks]
  (mapv #(or (parameter-table %) (throw (ex-info (str "no feed parameter " %) {:type :herald.feed/config :key %})))
        ks))

(defn body
  "The route data `:request` of a body of component schema `schema-name`, as JSON or as a form."
  [schema-name]
  {:required true
   :content {"application/json" (ref-schema schema-name) "application/x-www-form-urlencoded" (ref-schema schema-name)}})

(defn ok
  "A 200 response of JSON `response`: a component schema's name, `[name]` for an array of them, or a JSON Schema."
  [response]
  {200 {:description "OK"
        :content (json-content (cond (string? response) (ref-schema response)
                                     (vector? response) {:type "array" :items (ref-schema (first response))}
                                     :else response))}})

(defn ok-content
  "A 200 response of `content` (content type -> JSON Schema)."
  [content]
  {200 {:description "OK" :content content}})

(def ok-text "A 200 response of plain text." (ok-content {"text/plain" {:type "string"}}))

(def no-content "A 204 response." {204 {:description "No Content"}})

(defn paged
  "`responses` whose 200 carries the Link header of a page with older items."
  [responses]
  (assoc-in responses [200 :headers "Link"]
            {:schema {:type "string"} :description "<...?limit=n&before=cursor>; rel=\"next\" when older items remain"}))

(defn- error-response [c]
  (case (long c)
    413 {:description "body too large: a JSON Error (above the feed's limit or the server's hard cap)"
         :content (json-content (ref-schema "Error"))}
    503 {:description "not ready: the store is closed or the service is draining"
         :content (json-content {:type "object"})}
    {:description (case (long c) 400 "bad input, the field named" 404 "unknown participant (or post)"
                        409 "conflict: a block between the two participants (unblock first)"
                        422 "the Idempotency-Key was used for a post with other fields"
                        501 "Idempotency-Key is not supported by this deployment's store"
                        401 "with auth on: no bearer token, or one that does not verify (WWW-Authenticate: Bearer)"
                        403 "with auth on: the token's participant is not the path's"
                        415 "unsupported Content-Type" "error")
     :content (json-content (ref-schema "Error"))}))

(defn responses
  "The route data `:responses` of an operation: `success` (`ok`, `ok-content`, `ok-text`, `no-content`, `paged`)
  and the feed's JSON error answers for `errors`, each a status or [status description]."
  [success & errors]
  (into success (for [e errors]
                  (if (vector? e)
                    [(first e) {:description (second e) :content (json-content (ref-schema "Error"))}]
                    [e (error-response e)]))))

(def security-schemes
  "The bearer token scheme of routes marked `:herald.feed/auth :self` (herald.feed.auth; required only when auth is on)."
  {"bearerAuth" {:type "http" :scheme "bearer" :bearerFormat "JWT"
                 :description (str "A JWT whose subject (sub) is the participant id: HS256 with the service's secret, or"
                                   " RS256/ES256 with a key of its JWK set. Needed only when the service runs with auth on"
                                   " (the :scale profile's default; `make run` keeps it off).")}})

(defn- with-auth
  "`table` whose `:herald.feed/auth :self` operations require the bearer scheme (auth on), or accept it (auth off:
  `{}` is \"no requirement\"), and answer 401 and 403."
  [table auth-on?]
  (mapv (fn [[path data]]
          [path (into {} (for [[m op] data]
                           [m (cond-> op
                                (= :self (:herald.feed/auth op))
                                (-> (assoc :security (if auth-on? [{"bearerAuth" []}] [{} {"bearerAuth" []}]))
                                    (update :responses merge {401 (error-response 401) 403 (error-response 403)})))]))])
        table))

(defn document
  "The OpenAPI 3.1.0 document (a Clojure map ready for JSON) of route table `table` (herald.feed.routes/table),
  built by herald.http.openapi/openapi with the feed's schemas and security scheme. `:auth?` says whether the service runs
  with auth on: the `:herald.feed/auth :self` operations then require the bearer scheme, else it is optional."
  ([table version] (document table version {}))
  ([table version {:keys [auth?]}]
   (openapi/openapi (with-auth table (boolean auth?))
                    {:info {:title "herald.feed" :version version
                            :description "The news feed service: the reference contract plus paging, health, metrics and performance figures."}
                     :components {:schemas schemas :securitySchemes security-schemes}})))
