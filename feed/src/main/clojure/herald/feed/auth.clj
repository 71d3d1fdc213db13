(ns herald.feed.auth
  "Identity and authorization: the `:auth` config, the `Authenticator` protocol (a bearer token -> the participant id
  it proves) and the one route middleware that enforces the route table's `:auth :self` rule (the path's
  participant must be the token's subject). Routes without `:auth` stay public. The JWT implementation is
  herald.feed.auth.jwt (nimbus-jose-jwt)."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defprotocol Authenticator
  "Turns a bearer token into the participant it speaks for."
  (authenticate [a token]
    "The participant id (a long) that bearer token `token` (a string) proves. Throws `unauthorized` (401) for a token
    that does not verify, `:herald.feed.auth/unavailable` (503) when its keys cannot be fetched now.")
  (describe [a] "A short text for the start line, e.g. \"HS256\"; never a key or a secret."))

(def default-config
  "The `:auth` config's defaults (docs/feed.md, \"Configuration\")."
  {:enabled? false :hs256-secret nil :jwks-file nil :jwks-url nil :issuer nil :audience nil
   :clock-skew-s 60 :jwks-cache-ms 300000 :jwks-timeout-ms 5000})

(def ^:private realm "Bearer realm=\"herald.feed\"")

(defn unauthorized
  "An ex-info for a 401: `msg` says what is wrong with the credentials (never the token itself). Its response
  carries `WWW-Authenticate: Bearer` (RFC 6750), with `error=\"invalid_token\"` when a token was sent."
  [msg token-sent?]
  (ex-info msg {:type :herald.feed/unauthorized :field "Authorization"
                :www-authenticate (if token-sent?
                                    (str realm ", error=\"invalid_token\", error_description=\"" (str/replace msg "\"" "'") "\"")
                                    realm)}))

(defn forbidden
  "An ex-info for a 403: the token is good, but its participant may not act as the one the path names."
  [subject field value]
  (ex-info (str "the token speaks for /participant/" subject ", not for /participant/" value
                ": a participant may only act as itself")
           {:type :herald.feed/forbidden :field field :value (str "/participant/" value)}))

(defn- config-error [k msg]
  (ex-info msg {:type :herald.feed/config :key [:auth k]}))

(defn check-config
  "`cfg` (the `:auth` map) merged over `default-config` and checked; an unknown key or a bad value throws a
  `:herald.feed/config` ex-info naming the key (never echoing a secret). An HS256 secret shorter than 256 bits
  (32 UTF-8 bytes) is refused, and so is auth on without any key source."
  [cfg]
  (let [c (merge default-config cfg)]
    (doseq [k (keys c) :when (not (contains? default-config k))]
      (throw (config-error k (str "unknown :auth option " k ", expected one of "
                                  (str/join " " (sort (keys default-config)))))))
    (when-not (boolean? (:enabled? c))
      (throw (config-error :enabled? (str ":auth :enabled? must be true or false, got " (pr-str (:enabled? c))))))
    (doseq [k [:hs256-secret :jwks-file :jwks-url :issuer :audience] :let [v (get c k)]
            :when (and (some? v) (not (string? v)))]
      (throw (config-error k (str ":auth " k " must be a string"))))
    (doseq [k [:clock-skew-s :jwks-cache-ms :jwks-timeout-ms] :let [v (get c k)]
            :when (not (and (integer? v) (not (neg? (long v)))))]
      (throw (config-error k (str ":auth " k " must be an integer >= 0, got " (pr-str v)))))
    (let [c (into c (map (fn [k] [k (not-empty (some-> ^String (get c k) str/trim))]))
                  [:hs256-secret :jwks-file :jwks-url :issuer :audience])]
      (when-let [^String s (:hs256-secret c)]
        (let [n (alength (.getBytes s java.nio.charset.StandardCharsets/UTF_8))]
          (when (< n 32)
            (throw (config-error :hs256-secret
                                 (str ":auth :hs256-secret (HERALD_JWT_SECRET) is " (* 8 n) " bits long: HS256 needs a"
                                      " secret of at least 256 bits (32 bytes), e.g. `openssl rand -base64 48`"))))))
      (when (and (:enabled? c) (not (or (:hs256-secret c) (:jwks-file c) (:jwks-url c))))
        (throw (config-error :enabled?
                             (str ":auth is on but has no key: set :auth :hs256-secret (HERALD_JWT_SECRET), :jwks-file"
                                  " (HERALD_JWKS_FILE) or :jwks-url (HERALD_JWKS_URL), or turn it off (HERALD_AUTH=false)"))))
      c)))

(defn authenticator
  "The Authenticator of the `:auth` config `cfg` (checked with `check-config`), or nil when auth is off."
  [cfg]
  (let [c (check-config cfg)]
    (when (:enabled? c)
      ((requiring-resolve 'herald.feed.auth.jwt/authenticator) c))))

(defn start-line
  "What the start line says about auth: \"auth off: ...\" or \"auth on: bearer tokens HS256\"."
  [authenticator]
  (if authenticator
    (str "auth on: bearer tokens " (describe authenticator))
    "auth off: anyone may act as any participant"))

(defn bearer-token
  "The token of the request's `Authorization: Bearer <token>` header; a 401 when the header is missing or is
  not a Bearer credential."
  [req]
  (let [^String h (get-in req [:headers "authorization"])]
    (cond (str/blank? h)
          (throw (unauthorized "this operation needs a bearer token: send Authorization: Bearer <JWT>" false))
          :else
          (let [[_ scheme token] (re-matches #"(?s)\s*(\S+)\s+(\S+)\s*" h)]
            (if (and scheme (.equalsIgnoreCase "Bearer" ^String scheme))
              token
              (throw (unauthorized "the Authorization header must be \"Bearer <JWT>\"" true)))))))

(defn- path-participant
  "The participant id of path param `k`, or nil when it is not one (the handler answers that 400 itself)."
  [req k]
  (let [s (get-in req [:path-params k])]
    (when (and (string? s) (re-matches #"\d{1,19}" s))
      (try (let [n (Long/parseLong s)] (when (pos? n) n)) (catch NumberFormatException _ nil)))))

(defn wrap-route
  "Ring middleware for route spec `spec` {:path :auth :auth-param} (herald.feed.routes/ring-handler makes it from an
  operation's `:herald.feed/auth` and `:herald.feed/auth-param`): with an `authenticator` and
  `:auth :self` on the spec, a request needs a bearer token (401 without one or with a bad one) whose subject is
  the path's participant, path param `(:auth-param spec :id)` (403 when it is another). Without `:auth`, or with
  auth off (nil `authenticator`), `handler` itself: public routes never look at the Authorization header (except
  search's handler, through `viewer`)."
  [handler spec authenticator]
  (let [rule (:auth spec)
        param (:auth-param spec :id)]
    (when-not (contains? #{nil :self} rule)
      (throw (ex-info (str "route " (:path spec) " has :auth " (pr-str rule) ", expected :self or none")
                      {:type :herald.feed/config :key :auth :value rule})))
    (if (and authenticator (= :self rule))
      (fn [req]
        (let [subject (authenticate authenticator (bearer-token req))
              id (path-participant req param)]
          (when (and id (not= (long id) (long subject)))
            (throw (forbidden subject (name param) id)))
          (handler (assoc req ::subject subject))))
      handler)))

;; ---------------------------------------------------------------------------------------------------
;; a public route's optional viewer (search filtered by the searcher's mutes and blocks)

(defn viewer
  "The participant a request on a public route speaks for, when it says so (for read-time filtering: search hides
  the posts of the viewer's mutes and blocks). `claimed` is the participant id the request names (its `viewer`
  parameter), or nil. With an `authenticator` (auth on): the subject of the bearer token when the request sends an
  Authorization header (401 for a bad one), which `claimed` must then be (403 for another participant); `claimed`
  without a token is a 401, so nobody reads another's hidden set. With auth off (nil `authenticator`): `claimed`.
  nil when the request names no one: the public, unfiltered answer."
  [authenticator req claimed]
  (if authenticator
    (if (str/blank? (get-in req [:headers "authorization"]))
      (when claimed
        (throw (unauthorized (str "'viewer' needs a bearer token for /participant/" claimed
                                  ": send Authorization: Bearer <JWT>, or leave 'viewer' out") false)))
      (let [subject (authenticate authenticator (bearer-token req))]
        (when (and claimed (not= (long claimed) (long subject)))
          (throw (forbidden subject "viewer" claimed)))
        subject))
    claimed))
