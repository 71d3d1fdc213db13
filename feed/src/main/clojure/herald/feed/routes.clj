(ns herald.feed.routes
  "The feed's route table as herald.http route data (handlers, perf names, documentation) and the Ring handler built from it, with the operational endpoints."
  (:require [clojure.string :as str]
            [herald.feed.auth :as auth]
            [herald.feed.dashboard :as dash]
            [herald.feed.dashboard.live :as live]
            [herald.feed.errors :as err]
            [herald.feed.fanout :as fanout]
            [herald.feed.handlers :as h]
            [herald.feed.metrics :as metrics]
            [herald.feed.openapi :as api]
            [herald.feed.perf :as perf]
            [herald.feed.store :as store]
            [herald.http :as http]
            [herald.http.router :as router]
            [herald.json :as json]))

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
  "The route table: herald.http route data, one `[path {method operation}]` per path, read both by the router
  (`ring-handler`) and by the OpenAPI document (herald.feed.openapi/document, through herald.http.openapi/openapi). An
  operation is a method's map: `:handler` (fn [ctx req] response), herald.http's documentation keys (`:summary`
  `:operation-id` `:parameters` `:request` `:responses`, made of herald.feed.openapi's pieces), and the feed's own:
  `:herald.feed/perf [entity op]` (perf names; none = not recorded) and `:herald.feed/auth`.

  `:herald.feed/auth :self` marks an operation a participant may only do as itself: with auth on, it needs a bearer
  token whose subject is the path's participant (path param `:id`, or the one `:herald.feed/auth-param` names): 401
  without a good token, 403 for another participant (herald.feed.auth/wrap-route, one middleware for every route;
  the OpenAPI document gets the security requirement and the 401/403 answers from it). A new route that acts as, or
  reads the private data of, its participant (edit, delete, unfriend, mutes, blocks) just carries it; routes
  without it stay public. POST /participant stays open: it creates a participant, so there is no one to act as yet
  (an identity provider issues tokens for the id it answers)."
  [["/participant"
    {:post {:handler h/create-participant :herald.feed/perf [:participant :post] :operation-id "participant-post"
            :summary "Create a participant" :request (api/body "NewParticipant")
            :responses (api/responses (api/ok "Participant") 400 413 415)}}]
   ["/participant/:id"
    {:get {:handler h/get-participant :herald.feed/perf [:participant :get] :operation-id "participant-get"
           :summary "Fetch a participant" :parameters (api/params :id)
           :responses (api/responses (api/ok "Participant") 400 404)}}]
   ["/participant/:id/friends"
    {:get {:handler h/get-friends-page :herald.feed/perf [:friends :get] :operation-id "friends-get"
           :summary "List a participant's friendships, ascending by the friend's id" :parameters (api/params :id :limit :before)
           :responses (api/responses (api/paged (api/ok ["Friend"])) 400 404)}
     :post {:handler h/post-friend :herald.feed/perf [:friends :post] :operation-id "friends-post" :herald.feed/auth :self
            :summary "Befriend two participants (symmetric, idempotent; 409 while one blocks the other)"
            :parameters (api/params :id) :request (api/body "NewFriend")
            :responses (api/responses (api/ok "Friend") 400 404 409 413 415)}}]
   ["/participant/:id/outbound"
    {:get {:handler h/get-outbound :herald.feed/perf [:outbound :get] :operation-id "outbound-get"
           :summary "A participant's posts, newest first" :parameters (api/params :id :limit :before)
           :responses (api/responses (api/paged (api/ok ["Outbound"])) 400 404)}
     :post {:handler h/post-outbound :herald.feed/perf [:outbound :post] :operation-id "outbound-post" :herald.feed/auth :self
            :summary "Post a news item; it is copied into every friend's inbound feed" :parameters (api/params :id :idempotency-key)
            :request (api/body "NewOutbound")
            :responses (api/responses (api/ok "Outbound") 400 404 413 415 422 501
                                      [503 (str "storage unavailable: with the post possibly recorded, the error says so;"
                                                " retry with the same Idempotency-Key")])}}]
   ["/participant/:id/outbound/:postId"
    {:get {:handler h/get-post :herald.feed/perf [:outbound :get-one] :operation-id "outbound-get-one"
           :summary "One post, by its link (404 when the participant of the path is not its sender, or it is deleted)"
           :parameters (api/params :id :postId) :responses (api/responses (api/ok "Outbound") 400 404)}
     :patch {:handler h/patch-post :herald.feed/perf [:outbound :patch] :operation-id "outbound-patch" :herald.feed/auth :self
             :summary "Edit a post's subject and/or story; inbound copies and search follow" :parameters (api/params :id :postId)
             :request (api/body "OutboundEdit") :responses (api/responses (api/ok "Outbound") 400 404 413 415)}
     :delete {:handler h/delete-post :herald.feed/perf [:outbound :delete] :operation-id "outbound-delete" :herald.feed/auth :self
              :summary "Delete a post: it leaves the outbound feed at once, then every inbound feed and search"
              :parameters (api/params :id :postId) :responses (api/responses api/no-content 400 404)}}]
   ["/participant/:id/inbound"
    {:get {:handler h/get-inbound :herald.feed/perf [:inbound :get] :operation-id "inbound-get" :herald.feed/auth :self
           :summary "A participant's inbound feed, newest first" :parameters (api/params :id :limit :before)
           :responses (api/responses (api/paged (api/ok ["Inbound"])) 400 404)}}]
   ["/outbound"
    {:get {:handler h/search-outbound :herald.feed/perf [:outbound :search] :operation-id "outbound-search"
           :summary "Search posts: the sender link of each matching post, newest first"
           :parameters (api/params :keywords :limit :before :viewer)
           :responses (api/responses (api/paged (api/ok {:type "array" :items {:type "string" :example "/participant/7"}})) 400
                                     [401 "with auth on: a bad bearer token, or `viewer` without one"]
                                     [403 "with auth on: `viewer` is not the token's participant"] 404)}}]
   ;; relationships (issue 11)
   ["/participant/:id/friends/:otherId"
    {:delete {:handler h/delete-friend :herald.feed/perf [:friends :delete] :operation-id "friends-delete" :herald.feed/auth :self
              :summary "End a friendship, both sides (204 also when they were not friends)" :parameters (api/params :id :otherId)
              :responses (api/responses api/no-content 400 404)}}]
   ["/participant/:id/mutes"
    {:post {:handler h/post-mute :herald.feed/perf [:mutes :post] :operation-id "mutes-post" :herald.feed/auth :self
            :summary "Mute a participant: its posts are hidden from this inbound feed at read time" :parameters (api/params :id)
            :request (api/body "NewRelation") :responses (api/responses (api/ok "Relation") 400 404 413 415)}
     :get {:handler h/get-mutes :herald.feed/perf [:mutes :get] :operation-id "mutes-get" :herald.feed/auth :self
           :summary "The participants this one mutes, ascending ids" :parameters (api/params :id :limit :before)
           :responses (api/responses (api/paged (api/ok ["Relation"])) 400 404)}}]
   ["/participant/:id/mutes/:otherId"
    {:delete {:handler h/delete-mute :herald.feed/perf [:mutes :delete] :operation-id "mutes-delete" :herald.feed/auth :self
              :summary "Unmute a participant (204 also when it was not muted)" :parameters (api/params :id :otherId)
              :responses (api/responses api/no-content 400 404)}}]
   ["/participant/:id/blocks"
    {:post {:handler h/post-block :herald.feed/perf [:blocks :post] :operation-id "blocks-post" :herald.feed/auth :self
            :summary "Block a participant: the friendship ends, each one's posts are hidden from the other's inbound feed, befriending is a 409"
            :parameters (api/params :id) :request (api/body "NewRelation")
            :responses (api/responses (api/ok "Relation") 400 404 413 415)}
     :get {:handler h/get-blocks :herald.feed/perf [:blocks :get] :operation-id "blocks-get" :herald.feed/auth :self
           :summary "The participants this one blocks, ascending ids" :parameters (api/params :id :limit :before)
           :responses (api/responses (api/paged (api/ok ["Relation"])) 400 404)}}]
   ["/participant/:id/blocks/:otherId"
    {:delete {:handler h/delete-block :herald.feed/perf [:blocks :delete] :operation-id "blocks-delete" :herald.feed/auth :self
              :summary "Unblock a participant (204 also when it was not blocked); the friendship is not restored"
              :parameters (api/params :id :otherId) :responses (api/responses api/no-content 400 404)}}]
   ;; operations: not recorded in the figures
   ["/health" {:get {:handler health :operation-id "health-get" :summary "Liveness"
                     :responses (api/responses (api/ok {:type "object"}))}}]
   ["/ready" {:get {:handler ready :operation-id "ready-get" :summary "Readiness: 200 while the store is open, 503 otherwise"
                    :responses (api/responses (api/ok {:type "object"}) 503)}}]
   ["/metrics" {:get {:handler metrics-page :operation-id "metrics-get" :summary "Prometheus metrics"
                      :responses api/ok-text}}]
   ["/openapi.json" {:get {:handler openapi-doc :operation-id "openapi-get" :summary "This document"
                           :responses (api/responses (api/ok {:type "object"}))}}]
   ["/perf" {:get {:handler perf-json :operation-id "perf-get" :parameters (api/params :from :to)
                   :summary "Per-minute figures per entity x operation: count, median, p95, p99, max"
                   :responses (api/responses (api/ok {:type "object" :properties {:minutes {:type "array" :items {"$ref" "#/components/schemas/PerfMinute"}}}})
                                             400)}}]
   ["/perf/log" {:get {:handler perf-log :operation-id "perf-log-get" :parameters (api/params :from :to)
                       :summary "The performance log in the reference format YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms"
                       :responses (api/responses api/ok-text 400)}}]
   ;; the live dashboard (herald.feed.dashboard): not recorded in the figures it shows
   ["/dashboard" {:get {:handler dash/page :operation-id "dashboard-get"
                        :summary "The live dashboard: a page of per-minute throughput, latency, errors and lags, updated over /dashboard/live"
                        :responses (api/ok-content {"text/html" {:type "string"}})}}]
   ["/dashboard/assets/:file"
    {:get {:handler dash/asset :operation-id "dashboard-assets-file-get" :parameters (api/params :file :v)
           :summary "A script, style sheet or icon of the dashboard (cached for a year with ?v= its content hash)"
           :responses (api/responses (api/ok-content {"text/javascript" {:type "string"} "text/css" {:type "string"}
                                                      "image/svg+xml" {:type "string"}})
                                     [404 "no such asset"])}}]
   ["/dashboard/data" {:get {:handler dash/data :operation-id "dashboard-data-get"
                             :summary "The dashboard's figures now: per-minute series per entity x operation, totals, lags, instances"
                             :responses (api/ok {"$ref" "#/components/schemas/Dashboard"})}}]
   ["/dashboard/live"
    {:get {:handler dashboard-live :operation-id "dashboard-live-get"
           :summary "WebSocket (Upgrade: websocket): the dashboard's figures as a JSON text message at once, then every :dashboard :interval-ms"
           :responses (api/responses (api/ok-content {"application/json" {"$ref" "#/components/schemas/Dashboard"}})
                                     [426 "not a WebSocket upgrade"] [503 "too many dashboard viewers (:dashboard :max-viewers)"])}}]])

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
                   {:openapi-json (delay (json/write-bytes
                                          (api/document table (:version env) {:auth? (some? (:auth env))})))
                    :dashboard-options dash-opts
                    :dashboard-live (delay (live/handler (live/hub env dash-opts)))})
        ring-of (fn [path {:keys [handler] :as op}]
                  (let [ring (auth/wrap-route (fn [req] (handler ctx req))
                                              (cond-> {:path path :auth (:herald.feed/auth op)}
                                                (:herald.feed/auth-param op) (assoc :auth-param (:herald.feed/auth-param op)))
                                              (:auth env))]
                    (if-let [[entity op-name] (:herald.feed/perf op)]
                      (h/endpoint (:recorder env) entity op-name ring)
                      (h/endpoint nil nil nil ring))))]
    (-> (router/router (mapv (fn [[path ops]] [path (into {} (for [[m op] ops] [m (ring-of path op)]))]) table)
                     {:not-found not-found :method-not-allowed method-not-allowed})
        (h/wrap-form-params (:max-body-bytes (:limits (:ctx env)))))))
