(ns herald.feed.auth.jwt
  "JWT bearer tokens with nimbus-jose-jwt: HS256 with the configured secret, RS256 and ES256 with the keys of a
  JWKS file or URL (nimbus's JWKSource with its cache: refetched after `:jwks-cache-ms`, and at once, rate limited,
  for an unknown key id). Checks exp and nbf (with `:clock-skew-s`), iss and aud when configured; the subject must
  be a participant id. Also mints HS256 tokens (the jar's `token` command, tests)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed.auth :as auth]
            [herald.feed.outage :as outage])
  (:import (com.nimbusds.jose JOSEException JWSAlgorithm JWSHeader$Builder)
           (com.nimbusds.jose.crypto MACSigner)
           (com.nimbusds.jose.jwk JWKSet KeyType)
           (com.nimbusds.jose.jwk.source JWKSource JWKSourceBuilder)
           (com.nimbusds.jose.proc BadJOSEException BadJWSException JWSKeySelector JWSVerificationKeySelector SecurityContext)
           (com.nimbusds.jose.util DefaultResourceRetriever)
           (com.nimbusds.jwt JWTClaimsSet JWTClaimsSet$Builder JWTParser PlainJWT SignedJWT)
           (com.nimbusds.jwt.proc BadJWTException DefaultJWTClaimsVerifier DefaultJWTProcessor ExpiredJWTException)
           (java.net URI URL)
           (java.nio.charset StandardCharsets)
           (java.util Date)
           (javax.crypto.spec SecretKeySpec)))

(set! *warn-on-reflection* true)

(defn- secret-key ^SecretKeySpec [^String secret]
  (SecretKeySpec. (.getBytes secret StandardCharsets/UTF_8) "HmacSHA256"))

(defn- jwks-source
  "nimbus's cached JWKSource over `url` (http(s) or file), fetched with `timeout-ms` timeouts, kept `cache-ms`."
  ^JWKSource [^URL url cache-ms timeout-ms]
  (let [t (int timeout-ms)]
    (-> (JWKSourceBuilder/create url (DefaultResourceRetriever. t t (int (* 1024 1024))))
        (.cache (long (max 1 cache-ms)) (long (max 1 timeout-ms)))
        (.build))))

(defn- check-jwks-file!
  "Reads the JWKS file at start, so that a missing or malformed one is a startup error naming the key."
  [path]
  (let [f (io/file path)
        set (try (JWKSet/load f)
                 (catch Exception e
                   (throw (ex-info (str ":auth :jwks-file " path " is not a readable JWK set: " (.getMessage e))
                                   {:type :herald.feed/config :key [:auth :jwks-file]} e))))]
    (when-not (some #(#{KeyType/RSA KeyType/EC} (.getKeyType ^com.nimbusds.jose.jwk.JWK %)) (.getKeys ^JWKSet set))
      (throw (ex-info (str ":auth :jwks-file " path " holds no RSA or EC key")
                      {:type :herald.feed/config :key [:auth :jwks-file]})))
    (.toURL (.toURI f))))

(defn- parse-jwks-url [s]
  (try (let [u (URI. s)]
         (when-not (#{"http" "https"} (.getScheme u)) (throw (IllegalArgumentException. "not http(s)")))
         (.toURL u))
       (catch Exception _
         (throw (ex-info (str ":auth :jwks-url must be an http:// or https:// URL, got " (pr-str s))
                         {:type :herald.feed/config :key [:auth :jwks-url]})))))

(defn- key-selector
  "Keys by the token's algorithm: HS256 -> the secret, RS256/ES256 -> the JWK set's."
  ^JWSKeySelector [secret ^JWKSource source]
  (let [hs (some-> secret secret-key)
        ^java.util.Set pk-algs #{JWSAlgorithm/RS256 JWSAlgorithm/ES256}
        pk (when source (JWSVerificationKeySelector. pk-algs source))]
    (reify JWSKeySelector
      (selectJWSKeys [_ header ctx]
        (let [alg (.getAlgorithm header)]
          (cond (and hs (= JWSAlgorithm/HS256 alg)) [hs]
                (and pk (#{JWSAlgorithm/RS256 JWSAlgorithm/ES256} alg)) (.selectJWSKeys pk header ctx)
                :else []))))))

(defn- claims-message
  "Our words for a claim check that failed (nimbus's messages are not sent as they are)."
  [^BadJWTException e]
  (let [m (str (.getMessage e))]
    (cond (instance? ExpiredJWTException e) "the token has expired"
          (re-find #"before use time" m) "the token is not valid yet (nbf)"
          (re-find #"missing required claims" m) "the token lacks a required claim: sub and exp are required"
          (re-find #"aud" m) "the token's audience (aud) is not accepted"
          (re-find #"iss" m) "the token's issuer (iss) is not accepted"
          :else "the token's claims are not accepted")))

(defn- verify
  "The claims of `token` when it verifies with `processor` and `algs`, else a 401 (or a 503 when the keys cannot be
  fetched: logged by `reporter`, herald.feed.outage, a line per state change)."
  ^JWTClaimsSet [^DefaultJWTProcessor processor algs reporter ^String token]
  (let [bad #(throw (auth/unauthorized % true))
        jwt (try (JWTParser/parse token)
                 (catch java.text.ParseException _ (bad "the bearer token is not a JWT (header.payload.signature)")))
        _ (cond (instance? PlainJWT jwt) (bad "unsecured tokens (alg none) are refused")
                (not (instance? SignedJWT jwt)) (bad "encrypted tokens (JWE) are not accepted: send a signed JWT"))
        alg (.getName (.getAlgorithm (.getHeader ^SignedJWT jwt)))]
    (when-not (contains? algs alg)
      (bad (str "the token's algorithm " alg " is not accepted: use " (str/join " or " (sort algs)))))
    (try (let [claims (.process processor ^SignedJWT jwt nil)]
           (when reporter (outage/ok! reporter))
           claims)
         (catch BadJWTException e (bad (claims-message e)))
         (catch BadJWSException _ (bad "the token's signature does not verify"))
         (catch BadJOSEException _ (bad "no configured key matches the token (kid or algorithm)"))
         (catch com.nimbusds.jose.KeySourceException e
           (some-> reporter (outage/failed! e))
           (throw (ex-info "the JWK set cannot be fetched"
                           (cond-> {:type :herald.feed.auth/unavailable} reporter (outage/reported reporter)) e)))
         (catch JOSEException _ (bad "the token could not be verified"))
         (catch java.text.ParseException _ (bad "the token's claims are not a JSON object")))))

(defn- subject-id [^JWTClaimsSet claims]
  (let [s (.getSubject claims)]
    (or (when (and s (re-matches #"\d{1,19}" s))
          (try (let [n (Long/parseLong s)] (when (pos? n) n)) (catch NumberFormatException _ nil)))
        (throw (auth/unauthorized "the token's subject (sub) must be a participant id, e.g. \"7\"" true)))))

(defn authenticator
  "The JWT Authenticator of a checked `:auth` config (herald.feed.auth/check-config)."
  [{:keys [hs256-secret jwks-file jwks-url issuer audience clock-skew-s jwks-cache-ms jwks-timeout-ms]}]
  (let [url (cond jwks-file (check-jwks-file! jwks-file) jwks-url (parse-jwks-url jwks-url))
        source (some-> url (jwks-source jwks-cache-ms jwks-timeout-ms))
        reporter (when url (outage/reporter (str "the JWK set " url)))
        algs (cond-> #{} hs256-secret (conj "HS256") source (conj "RS256" "ES256"))
        verifier (doto (DefaultJWTClaimsVerifier. ^java.util.Set (when audience #{audience})
                                                  (if issuer (.build (.issuer (JWTClaimsSet$Builder.) issuer))
                                                      (.build (JWTClaimsSet$Builder.)))
                                                  #{"sub" "exp"} nil)
                   (.setMaxClockSkew (int clock-skew-s)))
        processor (doto (DefaultJWTProcessor.)
                    (.setJWSKeySelector (key-selector hs256-secret source))
                    (.setJWTClaimsSetVerifier verifier))
        text (str (str/join ", " (sort algs))
                  (cond jwks-file " (JWKS file)" jwks-url " (JWKS URL)" :else ""))]
    (reify auth/Authenticator
      (authenticate [_ token] (subject-id (verify processor algs reporter token)))
      (describe [_] text))))

(defn mint
  "An HS256 token for participant `subject` signed with `secret` (at least 32 bytes), valid `ttl-s` seconds from
  now (or from `:now-ms`), with `:issuer` and `:audience` when given."
  [secret subject ttl-s & {:keys [issuer audience now-ms not-before-ms]}]
  (let [now (long (or now-ms (System/currentTimeMillis)))
        claims (cond-> (-> (JWTClaimsSet$Builder.)
                           (.subject (str subject))
                           (.issueTime (Date. now))
                           (.expirationTime (Date. (+ now (* 1000 (long ttl-s))))))
                 issuer (.issuer issuer)
                 audience (.audience ^String audience)
                 not-before-ms (.notBeforeTime (Date. (long not-before-ms))))
        jwt (SignedJWT. (.build (JWSHeader$Builder. JWSAlgorithm/HS256)) (.build ^JWTClaimsSet$Builder claims))]
    (.sign jwt (MACSigner. (.getBytes ^String secret StandardCharsets/UTF_8)))
    (.serialize jwt)))
