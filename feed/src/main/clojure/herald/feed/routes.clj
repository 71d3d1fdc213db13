(ns herald.feed.routes
  "The feed's route table as data (handlers, perf names, OpenAPI facts) and the Ring handler built from it, with the operational endpoints."
  (:require [clojure.string :as str]
            [herald.feed.auth :as auth]
            [herald.feed.dashboard :as dash]
            [herald.feed.dashboard.live :as live]
            [herald.feed.errors :as err]
            [herald.feed.fanout :as fanout]
            [herald.feed.handlers :as h]
            [herald.feed.metrics :as metrics]
            [herald.feed.openapi :as openapi]
            [herald.feed.perf :as perf]
            [herald.feed.store :as store]
            [herald.http :as http]))

(set! *warn-on-reflection* true)

;; Every handler is a fn of (ctx req). ctx is the service context (herald.feed.service/context: :store :fanout
;; :limits) with the server's parts (:recorder :version :draining? :server :auth :config) and what `ring-handler`
;; builds once (:openapi-json, :dashboard-options, :dashboard-live: a delay, the hub is made when the first viewer comes).

(defn- text-response [content-type ^String s]
  {:status 200 :headers {"content-type" content-type} :body s})

(defn- health [_ _] (h/json-response {:status "ok"}))

(defn- ready [{:keys [store draining?]} _]
  (let [store-ok? (try (store/ready? store) (catch Exception _ false))   ; asked once per probe
        draining (boolean @draining?)
        ok? (and store-ok? (not draining))]
    (h/json-response (if ok? 200 503) {:status (if ok? "ready" "unavailable")
                                       :store (if store-ok? "open" "closed")
                                       :draining draining}
                     nil)))

(defn- metrics-page [{:keys [recorder fanout store server]} _]
  (text-response "text/plain; version=0.0.4; charset=utf-8"
                 (metrics/prometheus-text recorder (fanout/stats fanout)
                                          (try (store/stats store) (catch Exception _ {}))
                                          (when-let [srv (and server (deref server 0 nil))]
                                            (http/server-stats srv)))))

(defn- iso [ms] (str (java.time.Instant/ofEpochMilli (long ms))))

(defn- time-bounds
  "The /perf bounds [from-ms to-ms] of a request (nil = open); a 400 when from is after to."
  [req]
  (let [q (:query-params req)
        one #(let [v (get q %) v (if (sequential? v) (first v) v)]
               (when (= "" v)
                 (throw (ex-info (str "'" % "' must be epoch milliseconds or a date, got \"\"")
                                 {:type :herald.feed/bad-request :field % :value v})))
               v)]
    (let [from (perf/parse-time (one "from") "from")
          to (perf/parse-time (one "to") "to")]
      (when (and from to (> (long from) (long to)))
        (throw (ex-info (str "'from' (" (iso from) ") is after 'to' (" (iso to) ")")
                        {:type :herald.feed/bad-request :field "from" :value (one "from")})))
      [from to])))

(defn- perf-json [{:keys [recorder]} req]
  (let [[from to] (time-bounds req)]
    (h/json-response {:from (some-> from iso) :to (some-> to iso)
                      :minutes (vec (perf/figures recorder from to))})))

(defn- perf-log [{:keys [recorder]} req]
  (let [[from to] (time-bounds req)]
    ;; a lazy ISeq body streamed in chunks of lines: a day of figures never sits in memory as one string
    {:status 200 :headers {"content-type" "text/plain; charset=utf-8"}
     :body (map #(str (str/join "\n" %) "\n") (partition-all 4096 (perf/log-lines recorder from to)))}))

(defn- openapi-doc [ctx _]
  {:status 200 :headers {"content-type" "application/json; charset=utf-8"} :body @(:openapi-json ctx)})

(defn- dashboard-live [ctx req] (@(:dashboard-live ctx) req))

(def table
  "The route table, a plain value read by both the router (`ring-handler`) and the OpenAPI document
  (herald.feed.openapi): a vector of {:path :method :handler (fn [ctx req] response) :entity :op (perf names, nil =
  not recorded) :summary :params :body :response :errors :link? :auth}.

  `:auth :self` marks an operation a participant may only do as itself: with auth on, it needs a bearer token
  whose subject is the path's participant (path param `:id`, or the one `:auth-param` names): 401 without a good
  token, 403 for another participant (herald.feed.auth/wrap-route, one middleware for every route; the OpenAPI
  document gets the security requirement and the 401/403 answers from it). A new route that acts as, or reads
  the private data of, its participant (edit, delete, unfriend, mutes, blocks) just carries `:auth :self`;
  routes without it stay public. POST /participant stays open: it creates a participant, so there is no one to
  act as yet (an identity provider issues tokens for the id it answers)."
  [{:path "/participant" :method :post :entity :participant :op :post :handler h/create-participant
    :summary "Create a participant" :body "NewParticipant" :response "Participant" :errors [400 413 415]}
   {:path "/participant/:id" :method :get :entity :participant :op :get :handler h/get-participant
    :summary "Fetch a participant" :params [:id] :response "Participant" :errors [400 404]}
   {:path "/participant/:id/friends" :method :get :entity :friends :op :get :handler h/get-friends-page
    :summary "List a participant's friendships, ascending by the friend's id" :params [:id :limit :before]
    :response ["Friend"] :errors [400 404] :link? true}
   {:path "/participant/:id/friends" :method :post :entity :friends :op :post :handler h/post-friend
    :summary "Befriend two participants (symmetric, idempotent; 409 while one blocks the other)" :params [:id] :body "NewFriend"
    :response "Friend" :errors [400 404 409 413 415] :auth :self}
   {:path "/participant/:id/outbound" :method :get :entity :outbound :op :get :handler h/get-outbound
    :summary "A participant's posts, newest first" :params [:id :limit :before] :response ["Outbound"]
    :errors [400 404] :link? true}
   {:path "/participant/:id/outbound" :method :post :entity :outbound :op :post :handler h/post-outbound
    :summary "Post a news item; it is copied into every friend's inbound feed" :params [:id]
    :body "NewOutbound" :response "Outbound" :errors [400 404 413 415] :auth :self}
   {:path "/participant/:id/outbound/:postId" :method :get :entity :outbound :op :get-one :handler h/get-post
    :summary "One post, by its link (404 when the participant of the path is not its sender, or it is deleted)"
    :params [:id :postId] :response "Outbound" :errors [400 404]}
   {:path "/participant/:id/outbound/:postId" :method :patch :entity :outbound :op :patch :handler h/patch-post
    :summary "Edit a post's subject and/or story; inbound copies and search follow" :params [:id :postId]
    :body "OutboundEdit" :response "Outbound" :errors [400 404 413 415] :auth :self}
   {:path "/participant/:id/outbound/:postId" :method :delete :entity :outbound :op :delete :handler h/delete-post
    :summary "Delete a post: it leaves the outbound feed at once, then every inbound feed and search"
    :params [:id :postId] :response-type :none :errors [400 404] :auth :self}
   {:path "/participant/:id/inbound" :method :get :entity :inbound :op :get :handler h/get-inbound
    :summary "A participant's inbound feed, newest first" :params [:id :limit :before] :response ["Inbound"]
    :errors [400 404] :link? true :auth :self}
   {:path "/outbound" :method :get :entity :outbound :op :search :handler h/search-outbound
    :summary "Search posts: the sender link of each matching post, newest first" :params [:keywords :limit :before :viewer]
    :response {:type "array" :items {:type "string" :example "/participant/7"}} :errors [400 404] :link? true
    :error-docs {401 "with auth on: a bad bearer token, or `viewer` without one" 403 "with auth on: `viewer` is not the token's participant"}}
   ;; relationships (issue 11)
   {:path "/participant/:id/friends/:otherId" :method :delete :entity :friends :op :delete :handler h/delete-friend
    :summary "End a friendship, both sides (204 also when they were not friends)" :params [:id :otherId]
    :response-type :none :errors [400 404] :auth :self}
   {:path "/participant/:id/mutes" :method :post :entity :mutes :op :post :handler h/post-mute
    :summary "Mute a participant: its posts are hidden from this inbound feed at read time" :params [:id]
    :body "NewRelation" :response "Relation" :errors [400 404 413 415] :auth :self}
   {:path "/participant/:id/mutes" :method :get :entity :mutes :op :get :handler h/get-mutes
    :summary "The participants this one mutes, ascending ids" :params [:id :limit :before] :response ["Relation"]
    :errors [400 404] :link? true :auth :self}
   {:path "/participant/:id/mutes/:otherId" :method :delete :entity :mutes :op :delete :handler h/delete-mute
    :summary "Unmute a participant (204 also when it was not muted)" :params [:id :otherId] :response-type :none
    :errors [400 404] :auth :self}
   {:path "/participant/:id/blocks" :method :post :entity :blocks :op :post :handler h/post-block
    :summary "Block a participant: the friendship ends, each one's posts are hidden from the other's inbound feed, befriending is a 409"
    :params [:id] :body "NewRelation" :response "Relation" :errors [400 404 413 415] :auth :self}
   {:path "/participant/:id/blocks" :method :get :entity :blocks :op :get :handler h/get-blocks
    :summary "The participants this one blocks, ascending ids" :params [:id :limit :before] :response ["Relation"]
    :errors [400 404] :link? true :auth :self}
   {:path "/participant/:id/blocks/:otherId" :method :delete :entity :blocks :op :delete :handler h/delete-block
    :summary "Unblock a participant (204 also when it was not blocked); the friendship is not restored"
    :params [:id :otherId] :response-type :none :errors [400 404] :auth :self}
   {:path "/health" :method :get :handler health :summary "Liveness" :response {:type "object"}}
   {:path "/ready" :method :get :handler ready :summary "Readiness: 200 while the store is open, 503 otherwise"
    :response {:type "object"} :errors [503]}
   {:path "/metrics" :method :get :handler metrics-page :summary "Prometheus metrics" :response-type :text}
   {:path "/openapi.json" :method :get :handler openapi-doc :summary "This document" :response {:type "object"}}
   {:path "/perf" :method :get :handler perf-json :params [:from :to]
    :summary "Per-minute figures per entity x operation: count, median, p95, p99, max"
    :response {:type "object" :properties {:minutes {:type "array" :items {"$ref" "#/components/schemas/PerfMinute"}}}}
    :errors [400]}
   {:path "/perf/log" :method :get :handler perf-log :params [:from :to] :response-type :text
    :summary "The performance log in the reference format YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms"
    :errors [400]}
   ;; the live dashboard (herald.feed.dashboard): not recorded in the figures it shows
   {:path "/dashboard" :method :get :handler dash/page :response-content {"text/html" {:schema {:type "string"}}}
    :summary "The live dashboard: a page of per-minute throughput, latency, errors and lags, updated over /dashboard/live"}
   {:path "/dashboard/assets/:file" :method :get :handler dash/asset :params [:file :v]
    :response-content {"text/javascript" {:schema {:type "string"}} "text/css" {:schema {:type "string"}}
                       "image/svg+xml" {:schema {:type "string"}}}
    :summary "A script, style sheet or icon of the dashboard (cached for a year with ?v= its content hash)"
    :errors [404] :error-docs {404 "no such asset"}}
   {:path "/dashboard/data" :method :get :handler dash/data :response {"$ref" "#/components/schemas/Dashboard"}
    :summary "The dashboard's figures now: per-minute series per entity x operation, totals, lags, instances"}
   {:path "/dashboard/live" :method :get :handler dashboard-live
    :response-content {"application/json" {:schema {"$ref" "#/components/schemas/Dashboard"}}}
    :summary "WebSocket (Upgrade: websocket): the dashboard's figures as a JSON text message at once, then every :dashboard :interval-ms"
    :errors [426 503] :error-docs {426 "not a WebSocket upgrade" 503 "too many dashboard viewers (:dashboard :max-viewers)"}}])

(defn- not-found [req]
  (err/response 404 (str "no route for " (:uri req)) :field "path" :value (:uri req)))

(defn- method-not-allowed [req]
  (let [allow (:herald.http/allow req)]
    (err/response 405 (str "method " (str/upper-case (name (:request-method req))) " is not allowed on "
                           (:uri req) (when allow (str "; allowed: " allow)))
                  :field "method" :value (str/upper-case (name (:request-method req)))
                  :headers (when allow {"allow" allow}))))

(defn ring-handler
  "The feed's Ring handler over `env` {:ctx :store :fanout :recorder :version :draining? :auth :config} (`:auth` an
  herald.feed.auth/Authenticator, nil = auth off): every route's handler gets one ctx, the service context
  merged with the rest of env and what is built once here (the OpenAPI document, the dashboard's hub)."
  [env]
  (let [dash-opts (dash/options (get-in env [:config :dashboard]))
        ctx (merge (:ctx env) (dissoc env :ctx)
                   {:openapi-json (delay (http/write-json-bytes
                                          (openapi/document table (:version env) {:auth? (some? (:auth env))})))
                    :dashboard-options dash-opts
                    :dashboard-live (delay (live/handler (live/hub env dash-opts)))})
        by-path (reduce (fn [m {:keys [path method handler entity op] :as spec}]
                          (let [ring (auth/wrap-route (fn [req] (handler ctx req)) spec (:auth env))
                                ring (if entity
                                       (h/endpoint (:recorder env) entity op ring)
                                       (h/endpoint nil nil nil ring))]
                            (update m path (fnil assoc (array-map)) method ring)))
                        (array-map) table)
        paths (distinct (map :path table))]
    (-> (http/router (mapv (fn [p] [p (get by-path p)]) paths)
                     {:not-found not-found :method-not-allowed method-not-allowed})
        (h/wrap-form-params (:max-body-bytes (:limits (:ctx env)))))))
