(ns herald.load.impl.jwt
  "HS256 bearer tokens for the feed workload (`:jwt-secret`): one per simulated participant, subject its id,
  minted with the JDK's HmacSHA256 and cached for the run. The feed verifies them with nimbus-jose-jwt
  (herald.feed.auth.jwt); herald.feed.auth-test runs this workload against an auth-on feed."
  (:require [herald.json :as json])
  (:import (java.nio.charset StandardCharsets)
           (java.util Base64)
           (java.util.concurrent ConcurrentHashMap)
           (java.util.function Function)
           (javax.crypto Mac)
           (javax.crypto.spec SecretKeySpec)))

(set! *warn-on-reflection* true)

(defn- b64 ^String [^bytes bs]
  (.encodeToString (.withoutPadding (Base64/getUrlEncoder)) bs))

(defn- utf8 ^bytes [^String s] (.getBytes s StandardCharsets/UTF_8))

(defn mint
  "An HS256 JWT for participant `subject` signed with `secret`, issued now and valid `ttl-s` seconds, with
  `issuer` and `audience` when given (nil: none)."
  ^String [^String secret subject ttl-s issuer audience]
  (let [now (quot (System/currentTimeMillis) 1000)
        header (b64 (utf8 (json/write-str {"alg" "HS256" "typ" "JWT"})))
        claims (cond-> {"sub" (str subject) "iat" now "exp" (+ now (long ttl-s))}
                 issuer (assoc "iss" issuer)
                 audience (assoc "aud" audience))
        input (str header "." (b64 (utf8 (json/write-str claims))))
        mac (doto (Mac/getInstance "HmacSHA256") (.init (SecretKeySpec. (utf8 secret) "HmacSHA256")))]
    (str input "." (b64 (.doFinal mac (utf8 input))))))

(defn token-source
  "A fn of a participant id -> \"Bearer <token>\" for the feed options `opts` (`:jwt-secret`, `:jwt-issuer`,
  `:jwt-audience`; valid for the run's warm-up and duration plus an hour), minting each participant's token once;
  nil without a secret."
  [{:keys [jwt-secret jwt-issuer jwt-audience warmup duration]}]
  (when jwt-secret
    (let [ttl (+ 3600 (long (Math/ceil (+ (double (or warmup 0)) (double (or duration 0))))))
          cache (ConcurrentHashMap.)
          f (reify Function (apply [_ id] (str "Bearer " (mint jwt-secret id ttl jwt-issuer jwt-audience))))]
      (fn [id] (.computeIfAbsent cache id f)))))
