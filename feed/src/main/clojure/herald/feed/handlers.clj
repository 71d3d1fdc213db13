(ns herald.feed.handlers
  "Ring handlers of the feed's HTTP API: request parsing, response rendering in the reference format, and per-request performance recording."
  (:require [clojure.string :as str]
            [herald.feed.auth :as auth]
            [herald.feed.errors :as err]
            [herald.feed.idempotency :as idem]
            [herald.feed.forms :as forms]
            [herald.feed.outage :as outage]
            [herald.feed.perf :as perf]
            [herald.feed.relations :as rel]
            [herald.feed.service :as svc]
            [herald.feed.store.cursor :as cursor]
            [herald.http.middleware :as mw]
            [herald.json :as json])
  (:import (java.io FilterInputStream InputStream)
           (java.net URLEncoder)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent ConcurrentHashMap)
           (java.util.function Function)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private json-type "application/json; charset=utf-8")

(defn json-response
  "A 200 (or `status`) response whose body is `data` as JSON bytes."
  ([data] (json-response 200 data nil))
  ([status data headers]
   {:status status
    :headers (if headers (assoc headers "content-type" json-type) {"content-type" json-type})
    :body (json/write-bytes data)}))

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.handlers"))

(defn- log-error
  "A programmer error (a 500): one log entry with the request and the stack trace."
  [^Throwable t req]
  (.error log (str "unhandled error on " (some-> (:request-method req) name) " " (:uri req) ": " t) t))

(def ^:private ^ConcurrentHashMap outage-reporters
  "ex-info :type -> the outage reporter of 503s that no backend reported (see herald.feed.outage)."
  (ConcurrentHashMap.))

(defn- log-outage
  "A 503: nothing when the backend's outage reporter has logged it, else through a reporter for its :type, so an
  outage is a few lines, not one per request."
  [e]
  (when-not (outage/reported? e)
    (let [t (:type (ex-data e))
          r (.computeIfAbsent outage-reporters t
                              (reify Function
                                (apply [_ t] (outage/reporter (str "storage (" t ")") {:quiet-back-ms 10000}))))]
      (outage/failed! r e))))

(defn endpoint
  "Wraps handler `f` (request -> response) of entity x operation: client errors (ex-info with a known :type)
  become JSON 4xx responses, a storage outage a 503 (logged by herald.feed.outage: a line per state change, not
  per request), anything else a JSON 500 without internals (logged with its stack trace); the request's duration
  and status are recorded in `recorder` (nil records nothing)."
  [recorder entity op f]
  (fn [req]
    (let [start (System/nanoTime)
          start-ms (System/currentTimeMillis)
          resp (try (f req)
                    (catch clojure.lang.ExceptionInfo e
                      (if-let [r (err/ex->response e)]
                        (do (when (= 503 (:status r)) (log-outage e)) r)
                        (do (log-error e req) (err/response 500 "internal server error"))))
                    (catch Throwable t
                      (log-error t req)
                      (err/response 500 "internal server error")))]
      (when recorder
        (perf/record! recorder entity op (- (System/nanoTime) start) (long (:status resp 200)) start-ms))
      resp)))

;; ---------------------------------------------------------------------------------------------------
;; request parsing

(defn- media-type [req]
  (when-let [^String ct (get (:headers req) "content-type")]
    (let [i (.indexOf ct ";")]
      (str/lower-case (str/trim (if (neg? i) ct (subs ct 0 i)))))))

(defn- check-size!
  "A JSON 413 when the declared Content-Length exceeds the feed's :max-body-bytes (the server's own
  hard cap, :http :max-body-bytes, sits above it and answers larger bodies itself)."
  [req limit]
  (when-let [^String n (get (:headers req) "content-length")]
    (let [size (try (Long/parseLong (str/trim n)) (catch NumberFormatException _ 0))]
      (when (> size (long limit)) (throw (err/payload-too-large size limit))))))

(defn- bounded
  "`in` that throws a JSON 413 once more than `limit` bytes were read: a body without a Content-Length
  (chunked, or HTTP/2) gets the same answer as one that declares its size."
  ^InputStream [^InputStream in limit]
  (let [limit (long limit)
        seen (long-array 1)
        count! (fn [^long k]
                 (when (pos? k)
                   (let [n (+ (aget seen 0) k)]
                     (aset seen 0 n)
                     (when (> n limit) (throw (err/payload-too-large limit)))))
                 k)]
    (proxy [FilterInputStream] [in]
      (read
        ([] (let [b (.read in)] (when (>= b 0) (count! 1)) b))
        ([^bytes bs] (count! (.read in bs 0 (alength bs))))
        ([^bytes bs off len] (count! (.read in bs (int off) (int len))))))))

(defn wrap-form-params
  "herald.http.middleware/wrap-params for the feed: urlencoded form bodies over the feed's `limit` get the feed's JSON 413
  (`field` body), declared or counted while the middleware reads them, like JSON bodies do."
  [handler limit]
  (let [h (mw/wrap-params handler {:max-form-bytes (inc (long limit))})]
    (fn [req]
      (if (= "application/x-www-form-urlencoded" (media-type req))
        (try (check-size! req limit)
             (h (cond-> req (instance? InputStream (:body req)) (update :body bounded limit)))
             (catch clojure.lang.ExceptionInfo e
               (or (err/ex->response e) (throw e))))
        (h req)))))

(defn body-params
  "The request body as a map with keyword keys: JSON objects (application/json or any +json type)
  or form-encoded bodies (application/x-www-form-urlencoded). Other media types are a 415, a
  JSON body that is not an object or repeats a key a 400, a body above `limit` bytes a 413 (declared
  or counted while reading)."
  [req limit]
  (check-size! req limit)
  (let [mt (media-type req)]
    (cond
      (= mt "application/x-www-form-urlencoded")
      (do (forms/check-text! req) ; a 400 naming the field, not U+FFFD stored; a 415 for a charset it cannot take
          (into {} (map (fn [[k v]] [(keyword k) v])) (:form-params req)))

      (and mt (or (= mt "application/json") (str/ends-with? mt "+json")))
      (let [data (when-let [b (:body req)]
                   (json/read (if (instance? InputStream b) (bounded b limit) b)
                              ;; decimals exact: 1e400 is then a number that is no id (a 400 naming its
                              ;; field), not a malformed body (a double cannot hold it)
                              {:keywords? true :reject-duplicate-keys? true :bigdecimals? true}))]
        (if (map? data)
          data
          (throw (err/bad-request (str "the JSON body must be an object, got "
                                       (if (nil? (:body req)) "no body" (err/json-kind data)))
                                  "body"))))

      :else (throw (err/unsupported-media-type (get-in req [:headers "content-type"]))))))

(defn- path-id [req]
  (svc/parse-id "id" (get-in req [:path-params :id])))

;; ---------------------------------------------------------------------------------------------------
;; rendering in the reference format

(defn- participant-json [{:keys [id name]}]
  {:id id :name name :link (svc/link id)})

(defn- friendship-json [{:keys [id from to]}]
  {:id id :from (svc/link from) :to (svc/link to)})

(defn- outbound-json [{:keys [id from occurred subject story]}]
  {:from (svc/link from) :occurred occurred :subject subject :story story
   :id id :link (svc/post-link from id)})

(defn- inbound-json [to {:keys [id from occurred subject story]}]
  {:from (svc/link from) :to (svc/link to) :occurred occurred :subject subject :story story
   :id id :link (svc/post-link from id)})

(defn- encode ^String [s] (URLEncoder/encode (str s) StandardCharsets/UTF_8))

(defn- page-response
  "The JSON array of a page, with a Link rel=next header when older items remain (`query`, e.g. \"keywords=x&\",
  is put before limit and before)."
  ([req opts page render] (page-response req opts page render ""))
  ([req {:keys [limit]} {:keys [items next]} render query]
   (json-response 200 (mapv render items)
                  (when next
                    {"link" (str "<" (:uri req) "?" query "limit=" limit "&before=" (encode next) ">; rel=\"next\"")}))))

;; ---------------------------------------------------------------------------------------------------
;; handlers of the contract: fns of (ctx req), ctx from herald.feed.service/context (see herald.feed.routes)

(defn create-participant
  "POST /participant: {name} -> {id name link}."
  [ctx req]
  (json-response (participant-json (svc/create-participant! ctx (body-params req (:max-body-bytes (:limits ctx)))))))

(defn get-participant
  "GET /participant/:id -> {id name link}."
  [ctx req]
  (json-response (participant-json (svc/participant ctx (path-id req)))))

(defn post-friend
  "POST /participant/:id/friends: {from to} -> {id from to}."
  [ctx req]
  (json-response (friendship-json (svc/befriend! ctx (path-id req) (body-params req (:max-body-bytes (:limits ctx)))))))

(defn get-friends
  "GET /participant/:id/friends -> [{id from to}]."
  [ctx req]
  (json-response (mapv friendship-json (svc/friends ctx (path-id req)))))

(defn post-outbound
  "POST /participant/:id/outbound: {from occurred subject story} -> the item echoed. With an `Idempotency-Key`
  header (herald.feed.idempotency), a repeat of the same fields answers the first post (issue 10)."
  [ctx req]
  (let [id (path-id req)
        k (idem/request-key req)]
    (json-response (outbound-json (svc/publish! ctx id (body-params req (:max-body-bytes (:limits ctx))) k)))))

(defn- check-cursor!
  "Paging options with a `:before` that decodes (herald.feed.store.cursor, the stores' own bounds), else a 400
  naming `before`: the store never sees a cursor it would refuse."
  [{:keys [before] :as opts}]
  (when (some? before)
    (try (cursor/decode before)
         (catch clojure.lang.ExceptionInfo e
           (throw (err/bad-request (str "'before' must be a cursor from a previous page's Link header, got "
                                        (err/json-text before))
                                   "before" before e)))))
  opts)

(defn- feed-page [ctx req read render-fn]
  (let [id (path-id req)
        opts (check-cursor! (svc/page-opts (:limits ctx) (:query-params req) :default-limit :max-limit))]
    (page-response req opts (read ctx id opts) (render-fn id))))

(defn get-outbound
  "GET /participant/:id/outbound?limit=&before= -> [{from occurred subject story}], newest first."
  [ctx req] (feed-page ctx req svc/outbound (constantly outbound-json)))

(defn get-inbound
  "GET /participant/:id/inbound?limit=&before= -> [{from to occurred subject story}], newest first."
  [ctx req] (feed-page ctx req svc/inbound (fn [id] (partial inbound-json id))))

(defn search-outbound
  "GET /outbound?keywords=&limit=&before=&viewer= -> [sender link of each matching post], newest first; a Link
  rel=next header when more match. A known searcher (herald.feed.auth/viewer: the token's participant with auth
  on, the `viewer` parameter with auth off) does not see the posts of the participants it mutes or blocks or who
  block it."
  [ctx req]
  (let [q (:query-params req)
        opts (check-cursor! (svc/page-opts (:limits ctx) q :default-search-limit :max-search-limit))
        v (get q "viewer")
        viewer (auth/viewer (:auth ctx) req (when (some? v) (svc/parse-link "viewer" v)))]
    (page-response req opts (svc/search-page ctx (get q "keywords") opts viewer) (comp svc/link :from)
                   (str "keywords=" (encode (get q "keywords")) "&" (when (some? v) (str "viewer=" (encode v) "&"))))))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: a post's link /participant/:id/outbound/:postId

(defn- post-path [req]
  [(path-id req) (svc/parse-post-id (get-in req [:path-params :postId]))])

(defn get-post
  "GET /participant/:id/outbound/:postId -> the post item {from occurred subject story id link}."
  [ctx req]
  (let [[id post-id] (post-path req)] (json-response (outbound-json (svc/post ctx id post-id)))))

(defn patch-post
  "PATCH /participant/:id/outbound/:postId: {subject story} (either or both) -> the edited post item."
  [ctx req]
  (let [[id post-id] (post-path req)]
    (json-response (outbound-json (svc/edit-post! ctx id post-id (body-params req (:max-body-bytes (:limits ctx))))))))

(defn delete-post
  "DELETE /participant/:id/outbound/:postId -> 204 without a body."
  [ctx req]
  (let [[id post-id] (post-path req)]
    (svc/delete-post! ctx id post-id)
    {:status 204 :headers {} :body nil}))

;; ---------------------------------------------------------------------------------------------------
;; relationships (issue 11): unfriend, mutes, blocks, paged friend lists

(def ^:private no-content {:status 204 :headers {} :body nil})

(defn- other-id [req]
  (svc/parse-id "otherId" (get-in req [:path-params :otherId])))

(defn- relation-json [{:keys [from target]}]
  {:from (svc/link from) :target (svc/link target)})

(defn- list-page [ctx req read render]
  (let [opts (check-cursor! (svc/page-opts (:limits ctx) (:query-params req) :default-limit :max-limit))]
    (page-response req opts (read ctx (path-id req) opts) render)))

(defn get-friends-page
  "GET /participant/:id/friends?limit=&before= -> [{id from to}], ascending by the friend's id, Link rel=next."
  [ctx req] (list-page ctx req rel/friends-page friendship-json))

(defn delete-friend
  "DELETE /participant/:id/friends/:other -> 204: the friendship ends (204 too when they were not friends)."
  [ctx req]
  (rel/unfriend! ctx (path-id req) (other-id req)) no-content)

(defn- post-relation [ctx req write]
  (json-response (relation-json (write ctx (path-id req) (body-params req (:max-body-bytes (:limits ctx)))))))

(defn- delete-relation [ctx req write]
  (write ctx (path-id req) (other-id req)) no-content)

(defn post-mute "POST /participant/:id/mutes: {target} -> {from target}." [ctx req] (post-relation ctx req rel/mute!))
(defn get-mutes "GET /participant/:id/mutes?limit=&before= -> [{from target}]." [ctx req] (list-page ctx req rel/mutes-page relation-json))
(defn delete-mute "DELETE /participant/:id/mutes/:other -> 204." [ctx req] (delete-relation ctx req rel/unmute!))
(defn post-block "POST /participant/:id/blocks: {target} -> {from target}." [ctx req] (post-relation ctx req rel/block!))
(defn get-blocks "GET /participant/:id/blocks?limit=&before= -> [{from target}]." [ctx req] (list-page ctx req rel/blocks-page relation-json))
(defn delete-block "DELETE /participant/:id/blocks/:other -> 204." [ctx req] (delete-relation ctx req rel/unblock!))
