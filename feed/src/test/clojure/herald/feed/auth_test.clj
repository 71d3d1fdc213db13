(ns herald.feed.auth-test
  "Bearer tokens over real HTTP: HS256 (good, expired, bad signature, wrong alg, alg none, missing), RS256 and ES256
  from a JWKS file and from a JWKS URL served by a herald.http server, 401 vs 403, secrets and tokens never in
  bodies or logs, the jar's token command, and herald-load's feed workload against an auth-on feed."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.auth :as auth]
            [herald.feed.auth.jwt :as jwt]
            [herald.feed.config :as config]
            [herald.feed.main :as main]
            [herald.feed.test-util :as u]
            [herald.http :as http]
            [herald.json :as json]
            [herald.load :as load])
  (:import (com.nimbusds.jose JWSAlgorithm JWSHeader$Builder)
           (com.nimbusds.jose.crypto ECDSASigner MACSigner RSASSASigner)
           (com.nimbusds.jose.jwk Curve ECKey JWKSet RSAKey)
           (com.nimbusds.jose.jwk.gen ECKeyGenerator RSAKeyGenerator)
           (com.nimbusds.jwt JWTClaimsSet$Builder SignedJWT)
           (java.io ByteArrayOutputStream PrintStream)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse$BodyHandlers)
           (java.util Base64 Date)))

(set! *warn-on-reflection* true)

(def ^:private ^String secret "test-secret-of-more-than-256-bits-0123456789abcdef")

(def ^:private ^HttpClient client (HttpClient/newHttpClient))

(defn- req
  "{:status :headers :body :json} of a request with an optional bearer `token` (or a raw :authorization value)."
  [base path & {:keys [method json token authorization] :or {method :get}}]
  (let [b (cond-> (HttpRequest/newBuilder (URI/create (str base path)))
            json (.header "Content-Type" "application/json")
            token (.header "Authorization" (str "Bearer " token))
            authorization (.header "Authorization" authorization)
            true (.method (str/upper-case (name method))
                          (if json (HttpRequest$BodyPublishers/ofString (json/write-str json)) (HttpRequest$BodyPublishers/noBody))))
        r (.send client (.build b) (HttpResponse$BodyHandlers/ofString))
        body (str (.body r))]
    {:status (.statusCode r)
     :headers (into {} (map (fn [[k v]] [(str/lower-case k) (first v)])) (.map (.headers r)))
     :body body
     :json (when-not (str/blank? body) (try (json/read body {:keywords? false}) (catch Exception _ nil)))}))

(defn- signed
  "A compact JWT with `claims` {:sub :exp-s (from now) :nbf-s :iss :aud} signed by `signer` with `alg` and `kid`."
  [signer ^JWSAlgorithm alg kid {:keys [sub exp-s nbf-s iss aud] :or {exp-s 600}}]
  (let [now (System/currentTimeMillis)
        c (cond-> (JWTClaimsSet$Builder.)
            sub (.subject (str sub))
            exp-s (.expirationTime (Date. (+ now (* 1000 (long exp-s)))))
            nbf-s (.notBeforeTime (Date. (+ now (* 1000 (long nbf-s)))))
            iss (.issuer ^String iss)
            aud (.audience ^String aud))
        h (cond-> (JWSHeader$Builder. alg) kid (.keyID kid))
        jwt (SignedJWT. (.build h) (.build ^JWTClaimsSet$Builder c))]
    (.sign jwt signer)
    (.serialize jwt)))

(defn- hs [claims] (signed (MACSigner. (.getBytes secret "UTF-8")) JWSAlgorithm/HS256 nil claims))

(defn- b64 [^String s] (.encodeToString (.withoutPadding (Base64/getUrlEncoder)) (.getBytes s "UTF-8")))

(defn- with-feed [auth-config f]
  (let [sys (u/start-feed! nil {:auth (merge {:enabled? true} auth-config)})]
    (try (f (feed/url sys)) (finally (feed/stop! sys)))))

(defn- participant! [base n] (get-in (req base "/participant" :method :post :json {:name n}) [:json "id"]))

(defn- post [id] {:from (str "/participant/" id) :occurred "2026-11-26" :subject "s" :story "auth story"})

(defn- unauthorized? [r]
  (and (= 401 (:status r))
       (str/starts-with? (str (get-in r [:headers "www-authenticate"])) "Bearer realm=\"herald.feed\"")
       (= "Authorization" (get-in r [:json "field"]))
       (string? (get-in r [:json "error"]))))

(deftest ^:integration hs256-tokens-decide-who-may-act-as-whom
  (let [seen (atom [])] ; every response, checked for secrets and tokens below
    (with-feed {:hs256-secret secret}
      (fn [base]
        (let [r! (fn [& args] (let [r (apply req base args)] (swap! seen conj r) r))
              a (participant! base "Ann") b (participant! base "Bob")
              ta (hs {:sub a}) tb (hs {:sub b})
              out-a (str "/participant/" a "/outbound")]
          (is (and (pos? a) (pos? b)) "POST /participant stays open")
          (testing "a good token acts as its participant"
            (is (= 200 (:status (r! out-a :method :post :json (post a) :token ta))))
            (is (= 200 (:status (r! (str "/participant/" a "/friends") :method :post :token ta
                                    :json {:from (str "/participant/" a) :to (str "/participant/" b)}))))
            (is (= 200 (:status (r! (str "/participant/" a "/inbound") :token ta)))))
          (testing "another participant's token is a 403"
            (let [r (r! out-a :method :post :json (post a) :token tb)]
              (is (= 403 (:status r)) (:body r))
              (is (= {"field" "id" "value" (str "/participant/" a)} (select-keys (:json r) ["field" "value"])))
              (is (re-find #"may only act as itself" (get-in r [:json "error"]))))
            (is (= 403 (:status (r! (str "/participant/" b "/inbound") :token ta))))
            (is (= 403 (:status (r! (str "/participant/" b "/friends") :method :post :token ta
                                    :json {:from (str "/participant/" a) :to (str "/participant/" b)})))))
          (testing "the relationship routes (:auth :self on their entries) follow the same rule"
            (let [pa (str "/participant/" a) tgt {:target (str "/participant/" b)}]
              (doseq [[m p body] [[:post (str pa "/mutes") tgt] [:get (str pa "/mutes") nil] [:delete (str pa "/mutes/" b) nil]
                                  [:post (str pa "/blocks") tgt] [:get (str pa "/blocks") nil] [:delete (str pa "/blocks/" b) nil]
                                  [:delete (str pa "/friends/" b) nil]]]
                (is (unauthorized? (r! p :method m :json body)) (str m " " p))
                (is (= 403 (:status (r! p :method m :json body :token tb))) (str m " " p)))
              (is (= 200 (:status (r! (str pa "/mutes") :method :post :json tgt :token ta))))
              (is (= [(str "/participant/" b)] (map #(get % "target") (:json (r! (str pa "/mutes") :token ta))))
                  "a participant reads its own mutes")
              (is (= 204 (:status (r! (str pa "/mutes/" b) :method :delete :token ta))))))
          (testing "401 without a token, or with one that does not verify"
            (let [r (r! out-a :method :post :json (post a))]
              (is (unauthorized? r) (pr-str r))
              (is (= "Bearer realm=\"herald.feed\"" (get-in r [:headers "www-authenticate"]))))
            (doseq [[what token msg] [["expired" (hs {:sub a :exp-s -3600}) #"expired"]
                                      ["not valid yet" (hs {:sub a :nbf-s 3600}) #"not valid yet"]
                                      ["bad signature" (signed (MACSigner. (.getBytes (str/reverse secret) "UTF-8")) JWSAlgorithm/HS256 nil {:sub a}) #"signature"]
                                      ["wrong alg" (signed (MACSigner. (.getBytes (str secret secret) "UTF-8")) JWSAlgorithm/HS512 nil {:sub a}) #"algorithm HS512 is not accepted"]
                                      ["alg none" (str (b64 "{\"alg\":\"none\"}") "." (b64 (str "{\"sub\":\"" a "\",\"exp\":9999999999}")) ".") #"alg none"]
                                      ["not a JWT" "abc.def" #"not a JWT"]
                                      ["no exp" (hs {:sub a :exp-s nil}) #"required claim"]
                                      ["subject not an id" (hs {:sub "ann"}) #"participant id"]
                                      ["tampered payload" (let [[h _ s] (str/split (hs {:sub b}) #"\.")]
                                                            (str h "." (b64 (str "{\"sub\":\"" a "\",\"exp\":9999999999}")) "." s))
                                       #"signature"]]]
              (let [r (r! out-a :method :post :json (post a) :token token)]
                (is (unauthorized? r) (str what ": " (pr-str r)))
                (is (re-find msg (str (get-in r [:json "error"]))) what)
                (is (re-find #"error=\"invalid_token\"" (str (get-in r [:headers "www-authenticate"]))) what)))
            (is (unauthorized? (r! out-a :method :post :json (post a) :authorization (str "Basic " (b64 "a:b")))))
            (is (unauthorized? (r! (str "/participant/" a "/inbound")))))
          (testing "a token expired within the clock skew (60 s) still works"
            (is (= 200 (:status (r! out-a :method :post :json (post a) :token (hs {:sub a :exp-s -30}))))))
          (testing "everything else stays public, and ignores a bad token"
            (doseq [p [(str "/participant/" a) (str "/participant/" a "/friends") out-a "/outbound?keywords=auth"]]
              (is (= 200 (:status (r! p))) p))
            (doseq [p [(str "/participant/" a) (str "/participant/" a "/friends") out-a]]
              (is (= 200 (:status (r! p :token "garbage"))) p)))
          (testing "search reads a token when one is sent (it hides that participant's mutes and blocks): a bad one is a 401"
            (is (unauthorized? (r! "/outbound?keywords=auth" :token "garbage")))
            (is (= 200 (:status (r! "/outbound?keywords=auth" :token ta)))))
          (testing "a malformed path id is the handler's 400, after authentication"
            (is (= 400 (:status (r! "/participant/abc/outbound" :method :post :json (post a) :token ta))))
            (is (= 401 (:status (r! "/participant/abc/outbound" :method :post :json (post a))))))
          (testing "the OpenAPI document: the bearer scheme, required on the :auth :self operations only"
            (let [doc (:json (r! "/openapi.json"))
                  op #(get-in doc ["paths" %1 %2])]
              (is (= {"type" "http" "scheme" "bearer" "bearerFormat" "JWT"}
                     (select-keys (get-in doc ["components" "securitySchemes" "bearerAuth"]) ["type" "scheme" "bearerFormat"])))
              (doseq [[p m] [["/participant/{id}/outbound" "post"] ["/participant/{id}/friends" "post"] ["/participant/{id}/inbound" "get"]
                             ["/participant/{id}/mutes" "get"] ["/participant/{id}/friends/{otherId}" "delete"]]]
                (is (= [{"bearerAuth" []}] (get (op p m) "security")) (str m " " p))
                (is (every? #(get-in (op p m) ["responses" %]) ["401" "403"]) (str m " " p)))
              (doseq [[p m] [["/participant" "post"] ["/participant/{id}/outbound" "get"] ["/outbound" "get"]]]
                (is (nil? (get (op p m) "security")) (str m " " p)))))
          (testing "no body or header carries the secret or a token"
            (doseq [r @seen
                    :let [text (str (:body r) " " (pr-str (:headers r)))]]
              (is (not (str/includes? text secret)))
              (is (not (str/includes? text ta)))
              (is (not (re-find #"eyJ[A-Za-z0-9_-]{10,}" text)) text))))))))

(deftest ^:integration startup-refuses-a-short-or-missing-secret
  (let [short "only-128-bits-ab"
        e (try (u/start-feed! nil {:auth {:enabled? true :hs256-secret short}}) nil
               (catch clojure.lang.ExceptionInfo e e))
        msgs (str/join " | " (map ex-message (take-while some? (iterate ex-cause e))))]
    (is (some? e))
    (is (re-find #":auth :hs256-secret \(HERALD_JWT_SECRET\) is 128 bits long: HS256 needs a secret of at least 256 bits" msgs))
    (is (not (str/includes? (pr-str (map ex-data (take-while some? (iterate ex-cause e)))) short)))
    (is (not (str/includes? msgs short))))
  (let [e (try (u/start-feed! nil {:auth {:enabled? true}}) nil (catch clojure.lang.ExceptionInfo e e))]
    (is (re-find #":auth is on but has no key" (str (ex-message (ex-cause e)))))))

(deftest the-scale-profile-turns-auth-on-make-run-keeps-it-off
  (let [auth-cfg (fn [env] (:auth (config/load-config nil {:env env} nil)))]
    (is (false? (:enabled? (auth-cfg {}))) "embedded (make run)")
    (is (true? (:enabled? (auth-cfg {"HERALD_PROFILE" "scale"}))))
    (is (false? (:enabled? (auth-cfg {"HERALD_PROFILE" "scale" "HERALD_AUTH" "false"}))))
    (is (true? (:enabled? (auth-cfg {"HERALD_PROFILE" "memory" "HERALD_AUTH" "true"}))))
    (is (= secret (:hs256-secret (auth-cfg {"HERALD_JWT_SECRET" secret})))))
  (is (= [:auth :hs256-secrt]
         (:key (ex-data (try (auth/check-config {:hs256-secrt secret}) (catch clojure.lang.ExceptionInfo e e)))))))

(defn- capture-stderr [f]
  (let [buf (ByteArrayOutputStream.) old System/err ps (PrintStream. buf true "UTF-8")]
    (System/setErr ps)
    (try (binding [*err* (java.io.PrintWriter. ps true)] (f))
         (finally (System/setErr old)))
    (.toString buf "UTF-8")))

(defn- jwks-json [& keys] (.toString (JWKSet. ^java.util.List (vec keys)) true))

(deftest ^:integration rs256-and-es256-from-a-jwks-file-and-url
  (let [rsa (.generate (.keyID (RSAKeyGenerator. 2048) "r1"))
        ec (.generate (.keyID (ECKeyGenerator. Curve/P_256) "e1"))
        other-rsa (.generate (.keyID (RSAKeyGenerator. 2048) "r1"))
        rs (fn [k sub] (signed (RSASSASigner. ^RSAKey k) JWSAlgorithm/RS256 "r1" {:sub sub :iss "https://id.example" :aud "herald"}))
        es (fn [sub & [claims]] (signed (ECDSASigner. ^ECKey ec) JWSAlgorithm/ES256 "e1" (merge {:sub sub :iss "https://id.example" :aud "herald"} claims)))
        check (fn [base]
                (let [a (participant! base "Ann") out (str "/participant/" a "/outbound")]
                  (is (= 200 (:status (req base out :method :post :json (post a) :token (rs rsa a)))) "RS256")
                  (is (= 200 (:status (req base out :method :post :json (post a) :token (es a)))) "ES256")
                  (is (= 403 (:status (req base out :method :post :json (post a) :token (es (inc a))))))
                  (is (unauthorized? (req base out :method :post :json (post a) :token (rs other-rsa a))) "a key not in the set")
                  (is (unauthorized? (req base out :method :post :json (post a) :token (es a {:iss "https://evil.example"}))) "issuer")
                  (is (unauthorized? (req base out :method :post :json (post a) :token (es a {:aud "other"}))) "audience")
                  (is (re-find #"algorithm HS256 is not accepted: use ES256 or RS256"
                               (str (get-in (req base out :method :post :json (post a) :token (hs {:sub a})) [:json "error"]))))))
        cfg {:issuer "https://id.example" :audience "herald"}]
    (testing "from a JWKS file"
      (let [f (java.io.File/createTempFile "jwks" ".json")]
        (spit f (jwks-json (.toPublicJWK ^RSAKey rsa) (.toPublicJWK ^ECKey ec)))
        (try (with-feed (assoc cfg :jwks-file (str f)) check)
             (finally (.delete f)))))
    (testing "from a JWKS URL served by herald.http, fetched once and cached"
      (let [fetches (atom 0)
            srv (http/start-server (fn [_] (swap! fetches inc)
                                     {:status 200 :headers {"content-type" "application/json"}
                                      :body (jwks-json (.toPublicJWK ^RSAKey rsa) (.toPublicJWK ^ECKey ec))})
                                   {:port 0 :host "127.0.0.1"})]
        (try (with-feed (assoc cfg :jwks-url (str "http://127.0.0.1:" (http/server-port srv) "/jwks.json")) check)
             (is (<= 1 @fetches 2) (str @fetches " fetches of the JWK set"))
             (finally @(http/stop-server srv)))))
    (testing "a JWKS URL that does not answer is a 503 to retry, not a 401, and one log line"
      (let [port (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s))
            log (capture-stderr
                 #(with-feed (assoc cfg :jwks-url (str "http://127.0.0.1:" port "/jwks.json") :jwks-timeout-ms 1000)
                    (fn [base]
                      (let [a (participant! base "Ann")
                            r (req base (str "/participant/" a "/outbound") :method :post :json (post a) :token (rs rsa a))]
                        (is (= 503 (:status r)) (:body r))
                        (is (= "1" (get-in r [:headers "retry-after"])))
                        (is (re-find #"cannot be fetched now" (str (get-in r [:json "error"]))))
                        (dotimes [_ 3] (req base (str "/participant/" a "/outbound") :method :post :json (post a) :token (rs rsa a)))))))]
        (is (= 1 (count (re-seq #"the JWK set http://127\.0\.0\.1:\d+/jwks\.json is down" log))) log)
        (is (not (re-find #"storage" log)) log)))
    (testing "a bad JWKS file is a startup error naming the key"
      (let [e (try (u/start-feed! nil {:auth {:enabled? true :jwks-file "/nonexistent/jwks.json"}}) nil
                   (catch clojure.lang.ExceptionInfo e e))]
        (is (= [:auth :jwks-file] (:key (ex-data (ex-cause e)))))))))

(deftest ^:integration herald-load-sends-tokens-to-an-auth-on-feed
  (let [results (atom nil)
        logs (capture-stderr
              #(with-feed {:hs256-secret secret}
                 (fn [base]
                   (let [port (Long/parseLong (re-find #"\d+$" base))
                         run (fn [o] (load/feed (merge {:port port :users 3 :duration 4 :reader-share 0.3 :search-share 0.2
                                                        :batch-size 4 :min-friends 1 :max-friends 2 :posts-per-user 3
                                                        :story-words 10 :progress :quiet} o)))]
                     (reset! results {:with (run {:jwt-secret secret}) :without (run {})})))))
        {:keys [with without]} @results]
    (is (pos? (+ (get-in with [:operations "outbound post" :latency :count] 0)
                 (get-in with [:operations "friends post" :latency :count] 0)))
        (str "requests acting as a participant: " (pr-str (keys (:operations with)))))
    (is (= #{200} (set (keys (:status with)))) (pr-str (:status with)))
    (is (= "(hidden)" (get-in with [:meta :options :jwt-secret])) "the secret is not in the result")
    (is (pos? (get-in without [:status 401] 0)) "without tokens, acting as a participant is a 401")
    (is (not (str/includes? logs secret)))
    (is (not (re-find #"eyJ[A-Za-z0-9_-]{10,}\." logs)) "no token in the log"))
  (let [e (try (load/feed {:port 1 :duration 1 :jwt-secret "short-secret"}) nil (catch clojure.lang.ExceptionInfo e e))]
    (is (= :jwt-secret (:key (ex-data e))))
    (is (not (str/includes? (str (ex-message e) (pr-str (ex-data e))) "short-secret")) "a bad secret is not echoed")))

(defn- run-main
  "The jar's main in a child JVM with `env`; [exit out err], or nil after 120 s."
  [env & args]
  (let [java (str (java.io.File. (System/getProperty "java.home") "bin/java"))
        ^java.util.List cmd (into [java "-XX:TieredStopAtLevel=1" "-cp" (child-jvm/classpath) "herald.feed.Main"] args)
        pb (ProcessBuilder. cmd)
        _ (doseq [[k v] env] (.put (.environment pb) k v))
        p (.start pb)
        out (future (slurp (.getInputStream p)))
        err (future (slurp (.getErrorStream p)))]
    (if (.waitFor p 120 java.util.concurrent.TimeUnit/SECONDS)
      [(.exitValue p) @out @err]
      (do (.destroyForcibly p) nil))))

(deftest ^:integration the-token-command-mints-a-token-the-feed-accepts
  (let [[code out err :as r] (run-main {"HERALD_PROFILE" "memory" "HERALD_JWT_SECRET" secret "HERALD_JWT_ISSUER" "me"}
                                       "token" "--participant" "7" "--ttl" "120")
        token (str/trim (str out))
        a (auth/authenticator {:enabled? true :hs256-secret secret :issuer "me"})]
    (is (= 0 code) (pr-str r))
    (is (re-matches #"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+" token))
    (is (= 7 (auth/authenticate a token)))
    (is (not (str/includes? (str out err) secret))))
  (testing "without a secret, or with a short one, exit 2 (in this JVM: its env is the map given)"
    (let [err (java.io.StringWriter.)
          code (binding [*err* err] (main/token ["--participant" "7"] {"HERALD_PROFILE" "memory"}))]
      (is (= 2 code))
      (is (re-find #"no HS256 secret is configured" (str err))))
    (let [err (java.io.StringWriter.)
          code (binding [*err* err] (main/token ["--participant" "7"] {"HERALD_JWT_SECRET" "short-secret"}))]
      (is (= 2 code))
      (is (re-find #":auth :hs256-secret \(HERALD_JWT_SECRET\) is 96 bits long" (str err)))
      (is (not (str/includes? (str err) "short-secret"))))
    (let [err (java.io.StringWriter.)
          code (binding [*err* err] (main/token ["--ttl" "5"] {"HERALD_JWT_SECRET" secret}))]
      (is (= 2 code))
      (is (re-find #"--participant ID is required" (str err)))))
  (testing "the start line says whether auth is on, never the secret"
    (let [off (auth/start-line nil)
          on (auth/start-line (auth/authenticator {:enabled? true :hs256-secret secret}))]
      (is (str/starts-with? off "auth off"))
      (is (= "auth on: bearer tokens HS256" on))
      (is (not (str/includes? on secret)))))
  (testing "jwt/mint and herald-load's tokens verify"
    (let [a (auth/authenticator {:enabled? true :hs256-secret secret :audience "feed"})]
      (is (= 9 (auth/authenticate a (jwt/mint secret 9 60 :audience "feed")))))))
