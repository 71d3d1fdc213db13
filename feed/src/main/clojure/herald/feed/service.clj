(ns herald.feed.service
  "The news feed's operations over a store and the fan-out: validation, participants, friendships, posting with fan-out on write, feeds and search."
  (:require [clojure.string :as str]
            [herald.feed.errors :as err]
            [herald.feed.fanout :as fanout]
            [herald.feed.idempotency :as idem]
            [herald.feed.pages :as pages]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.validate :as v])
  (:import (com.github.benmanes.caffeine.cache Cache Caffeine)
           (java.time LocalDate LocalTime ZoneOffset)))

(set! *warn-on-reflection* true)

;; ctx is {:store s :fanout f :limits {...}}; see `context`.

(def default-limits
  "Limits applied to requests; overridden by the config's :feed map (see docs/feed.md)."
  {:default-limit 50 :max-limit 1000 :default-search-limit 100 :max-search-limit 1000
   :max-name-chars 200 :max-subject-chars 1000 :max-story-chars 100000 :max-body-bytes 1048576
   :idempotency-key-ttl-ms 86400000})

(defn- check-limits [limits]
  (doseq [[k v] limits]
    (when-not (contains? default-limits k)
      (throw (ex-info (str "unknown :feed option " k ", expected one of " (sort (keys default-limits)))
                      {:type :herald.feed/config :key k})))
    (when-not (and (integer? v) (pos? (long v)))
      (throw (ex-info (str ":feed option " k " must be a positive integer, got " (pr-str v))
                      {:type :herald.feed/config :key k :value v}))))
  (doseq [k [:max-limit :max-search-limit] :when (> (long (get limits k)) (long v/max-limit))]
    (throw (ex-info (str ":feed option " k " must be at most " v/max-limit " (the stores' largest page), got " (get limits k))
                    {:type :herald.feed/config :key k :value (get limits k)})))
  (doseq [[d m] [[:default-limit :max-limit] [:default-search-limit :max-search-limit]]]
    (when (> (long (get limits d)) (long (get limits m)))
      (throw (ex-info (str ":feed option " d " (" (get limits d) ") exceeds " m " (" (get limits m) ")")
                      {:type :herald.feed/config :key d :value (get limits d)}))))
  limits)

(def ^:private participants-held
  "The most participants a context keeps in its own memory (`known-participant`; Caffeine evicts past it)."
  50000)

(defn context
  "The service context over `store` and `fanout` with `limits`; validated, naming the key at fault.

  | key                     | type | default | meaning |
  |-------------------------|------|---------|---------|
  | `:default-limit`        | int  | 50      | feed page size without ?limit= |
  | `:max-limit`            | int  | 1000    | largest feed ?limit= |
  | `:default-search-limit` | int  | 100     | search results without ?limit= |
  | `:max-search-limit`     | int  | 1000    | largest search ?limit= |
  | `:max-name-chars`       | int  | 200     | longest participant name |
  | `:max-subject-chars`    | int  | 1000    | longest subject |
  | `:max-story-chars`      | int  | 100000  | longest story |"
  [store fanout limits]
  {:store store :fanout fanout :limits (check-limits (merge default-limits limits))
   :participants (.build (.maximumSize (Caffeine/newBuilder) (long participants-held)))})

;; ---------------------------------------------------------------------------------------------------
;; parsing and validation

(defn link
  "The reference link of a participant id: \"/participant/7\"."
  ^String [id]
  (str "/participant/" id))

(defn- parse-positive-long [^String s]
  (when (and s (re-matches #"\d{1,19}" s))
    (try (let [n (Long/parseLong s)] (when (pos? n) n))
         (catch NumberFormatException _ nil))))

(defn parse-id
  "A participant id from a path segment (\"7\"); throws a 400 naming `field` otherwise."
  [field s]
  (or (parse-positive-long s)
      (throw (err/bad-request (str "'" field "' must be a positive integer id, got " (err/json-text s)) field s))))

(defn parse-link
  "A participant id from a link (\"/participant/7\", also an absolute http(s) URL with that path), a bare
  id string or an integer; throws a 400 naming `field` otherwise (no other prefix, no surrounding space,
  no trailing slash)."
  [field v]
  (or (cond (and (integer? v) (<= 1 v Long/MAX_VALUE)) (long v)
            (string? v) (some-> (re-matches #"(?:(?:https?://[^/?#\s]+)?/participant/)?(\d{1,19})" v) second parse-positive-long))
      (throw (err/bad-request (str "'" field "' must be a participant link like \"/participant/7\", got "
                                   (err/json-text v)
                                   ;; 7e0 is read as the decimal 7: say why "7" is refused where 7 is taken
                                   (when (decimal? v) " (a number with a fraction or an exponent: an id is an integer)"))
                              field v))))

(defn- single
  "Form bodies and query strings may repeat a key, JSON may send an array: a vector value is an error."
  [field v]
  (if (sequential? v)
    (throw (err/bad-request (str "'" field "' must be a single value, got " (count v) (if (= 1 (count v)) " value in an array" " values")) field (vec v)))
    v))

(defn- lone-surrogate?
  "True when `s` has a UTF-16 surrogate that is not part of a pair (JSON can carry one as \\ud800;
  it is no Unicode character, and strict clients reject it)."
  [^String s]
  (let [n (.length s)]
    (loop [i 0]
      (if (>= i n)
        false
        (let [c (.charAt s i)]
          (cond (and (Character/isHighSurrogate c) (< (inc i) n) (Character/isLowSurrogate (.charAt s (inc i))))
                (recur (+ i 2))
                (Character/isSurrogate c) true
                :else (recur (inc i))))))))

(defn required-string
  "The string value of `field` in `params` (keyword keys), at most `max-chars` long; a 400 naming the
  field when it is missing, not a string, blank (when `non-blank?`) or too long."
  [params field max-chars non-blank?]
  (let [v (single field (get params (keyword field)))]
    (cond (nil? v) (throw (err/bad-request (str "'" field "' is required") field))
          (not (string? v)) (throw (err/bad-request (str "'" field "' must be a string, got " (err/json-kind v)) field v))
          (lone-surrogate? v)
          (throw (err/bad-request (str "'" field "' is not valid Unicode: it has an unpaired surrogate (\\ud800-\\udfff)") field))
          (and non-blank? (str/blank? v)) (throw (err/bad-request (str "'" field "' must not be blank") field v))
          (> (.length ^String v) (long max-chars))
          (throw (err/bad-request (str "'" field "' is longer than " max-chars " characters") field))
          :else v)))

(defn parse-occurred
  "Validates `occurred` as posted: a date yyyy-MM-dd, optionally followed by an ISO-8601 time
  (2014-01-05T19:25:51.490Z, as the reference load tester sends). Missing means today (UTC). The
  value is kept exactly as posted."
  [params]
  (let [v (single "occurred" (:occurred params))]
    (cond (nil? v) (str (LocalDate/now ZoneOffset/UTC))
          (not (string? v)) (throw (err/bad-request (str "'occurred' must be a date string yyyy-MM-dd, got " (err/json-kind v)) "occurred" v))
          :else
          (let [bad #(err/bad-request (str "'occurred' must be a date yyyy-MM-dd (optionally with an ISO-8601 time), got " (err/json-text v))
                                      "occurred" v %)]
            (let [[_ y m d time offset]
                  (or (re-matches #"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?)(Z|[+-]\d{2}(?::?\d{2})?)?)?" v)
                      (throw (bad nil)))]
              ;; every part parsed, not only matched: 2014-02-30 and T25:00 are 400s. The date by its fields
              ;; (LocalDate/of), not LocalDate/parse: the formatter was 0.46% of a loaded instance's CPU (profile
              ;; of 2026-11-26), the regex has split it already
              (try (LocalDate/of (Integer/parseInt y) (Integer/parseInt m) (Integer/parseInt d))
                   (some-> ^String time (str/replace "," ".") LocalTime/parse)
                   (some-> ^String offset ZoneOffset/of)
                   v
                   (catch java.time.DateTimeException e (throw (bad e)))))))))

(defn page-opts
  "Paging options from query params (string keys): ?limit= (1..max, default from limits when
  absent; an empty value is a 400) and ?before= (an opaque cursor from a previous page's Link header;
  an empty value is a 400 too)."
  [limits query default-key max-key]
  (let [limit (single "limit" (get query "limit"))
        before (single "before" (get query "before"))
        max-limit (long (get limits max-key))
        n (if (nil? limit)
            (get limits default-key)
            (or (some-> (parse-positive-long limit) (#(when (<= (long %) max-limit) %)))
                (throw (err/bad-request (str "'limit' must be an integer in 1.." max-limit ", got " (err/json-text limit))
                                        "limit" limit))))]
    (when (and (some? before) (str/blank? before))
      (throw (err/bad-request (str "'before' must be a cursor from a previous page's Link header, got " (err/json-text before))
                              "before" before)))
    (cond-> {:limit (long n)}
      (some? before) (assoc :before before))))

;; ---------------------------------------------------------------------------------------------------
;; operations

(defn- known-participant
  "Participant `id` from the context's own map (`:participants`, made by `context`), else from the store (through
  the cache role), kept in the map when it exists. Sound without any invalidation: a participant, once created,
  never changes nor goes away (the graph role has no rename or delete), so only the ids found are kept; an id not
  found is asked again next time. It spares the cache server a round trip on every post, friendship and feed read
  of a participant seen before (one of the two a post made: the participant, then its friends)."
  [{:keys [store ^Cache participants]} id]
  (if (nil? participants)
    (graph/participant store id)
    (or (.getIfPresent participants id)
        (when-let [p (graph/participant store id)]
          (.put participants id p)
          p))))

(defn participant
  "The participant {:id :name} or a 404 naming the id; `field` names where the id came from."
  ([ctx id] (participant ctx id "id"))
  ([ctx id field]
   (or (known-participant ctx id)
       (throw (err/not-found (str "participant " id " does not exist") field (link id))))))

(defn create-participant!
  "Creates a participant from params {:name}; returns {:id :name}."
  [{:keys [store limits]} params]
  (graph/create-participant! store (required-string params "name" (:max-name-chars limits) true)))

(defn befriend!
  "Befriends params {:from link :to link} posted to participant `id`'s friends; `id` must be one of
  them (a missing :from defaults to `id`). Idempotent; self-friendship is a 400. Returns
  {:id :from :to} with the ids as posted."
  [{:keys [store] :as ctx} id params]
  (let [from (if (nil? (:from params)) id (parse-link "from" (single "from" (:from params))))
        to (if (nil? (:to params))
             (throw (err/bad-request "'to' is required" "to"))
             (parse-link "to" (single "to" (:to params))))]
    (when-not (or (= id from) (= id to))
      (throw (err/bad-request (str "participant " id " of the path is neither 'from' nor 'to'") "from" (link from))))
    (when (= from to)
      (throw (err/bad-request (str "a participant cannot befriend itself: " (link from)) "to" (link to))))
    (participant ctx from "from")
    (participant ctx to "to")
    (let [f (try (graph/befriend! store from to)
                 (catch clojure.lang.ExceptionInfo e
                   (if-not (graph/blocked-error? e)
                     (throw e)
                     (let [{:keys [blocker blocked]} (ex-data e)]
                       (throw (err/conflict (str "participant " (link blocker) " blocks " (link blocked)
                                                 ": unblock first (DELETE " (link blocker) "/blocks/" blocked ")")
                                            "to" {:blocker (link blocker) :blocked (link blocked)}))))))]
      {:id (:id f) :from from :to to})))

(defn friends
  "The friendships of participant `id`: [{:id :from id :to other}]."
  [{:keys [store] :as ctx} id]
  (participant ctx id)
  (graph/friends store id))

(def ^:private key-purge-ms
  "The least time between two purges of expired idempotency keys by one context."
  3600000)

(defn- publish-keyed!
  "`post` published under idempotency key `k` (herald.feed.idempotency): the key's post, also for a repeat."
  [{:keys [store fanout limits ^java.util.concurrent.atomic.AtomicLong key-purge]} id params post recipients k]
  (let [kr (idem/key-request id k (idem/fingerprint id (:occurred params) (:subject post) (:story post))
                             (:idempotency-key-ttl-ms limits))]
    (when key-purge (idem/maybe-purge! store key-purge (min key-purge-ms (long (:idempotency-key-ttl-ms limits)))))
    (idem/answer (fanout/publish-keyed! fanout post recipients kr) kr)))

(defn publish!
  "Posts params {:from :occurred :subject :story} as participant `id` (a missing :from defaults to
  `id`; another sender is a 400). Durably records the post with its fan-out to the sender's current friends
  (the store's pending fan-out, or a record on the Kafka log), then the fan-out jobs deliver and index it
  (herald.feed.fanout/publish!). Returns the stored post. With `idempotency-key` (a checked `Idempotency-Key`,
  herald.feed.idempotency), a repeat of the same fields returns the first call's post and records none; other
  fields are a 422 naming the header."
  ([ctx id params] (publish! ctx id params nil))
  ([{:keys [store fanout limits] :as ctx} id params idempotency-key]
   (let [from (if (nil? (:from params)) id (parse-link "from" (single "from" (:from params))))
         _ (when (not= from id)
             (throw (err/bad-request (str "'from' must be the participant of the path, " (link id)) "from" (link from))))
         post {:from from
               :occurred (parse-occurred params)
               :subject (required-string params "subject" (:max-subject-chars limits) false)
               :story (required-string params "story" (:max-story-chars limits) false)}
         _ (participant ctx id)
         recipients (mapv :to (graph/friends store id))]
     (if (nil? idempotency-key)
       (fanout/publish! fanout post recipients)
       (publish-keyed! ctx id params post recipients idempotency-key)))))

(defn outbound
  "A page {:items :next} of participant `id`'s posts, newest first; `opts` from `page-opts`."
  [{:keys [store] :as ctx} id opts]
  (participant ctx id)
  (feeds/outbound store id opts))

(defn inbound
  "A page {:items :next} of participant `id`'s inbound feed, newest first, without the posts of the participants
  it mutes or blocks or who block it (hidden at read time: herald.feed.pages/visible-inbound)."
  [{:keys [store] :as ctx} id opts]
  (participant ctx id)
  (pages/visible-inbound store id opts))

(defn search
  "Sender ids of the posts matching every word of `keywords`, newest first, at most `limit`."
  [{:keys [store]} keywords limit]
  (when (nil? keywords) (throw (err/bad-request "'keywords' is required" "keywords")))
  (let [kw (single "keywords" keywords)]
    (when (str/blank? kw)
      (throw (err/bad-request (str "'keywords' must hold at least one word, got " (err/json-text kw)) "keywords" kw)))
    (when (> (count kw) 1000) (throw (err/bad-request "'keywords' is longer than 1000 characters" "keywords")))
    (search/search store kw {:limit limit})))

(defn search-page
  "A page {:items [{:id :from}] :next} of the posts matching every word of `keywords`, newest first; `opts`
  {:limit :before} from `page-opts` (a cursor already checked). With a `viewer` (a participant id, 404 naming
  `viewer` when unknown), the posts of its hidden set (graph/hidden: whom it mutes or blocks, who block it) are left
  out by the search itself, so the page still holds `limit` items while other matches remain."
  ([ctx keywords opts] (search-page ctx keywords opts nil))
  ([{:keys [store] :as ctx} keywords opts viewer]
   (when (nil? keywords) (throw (err/bad-request "'keywords' is required" "keywords")))
   (let [kw (single "keywords" keywords)]
     (when (str/blank? kw)
       (throw (err/bad-request (str "'keywords' must hold at least one word, got " (err/json-text kw)) "keywords" kw)))
     (when (> (count kw) 1000) (throw (err/bad-request "'keywords' is longer than 1000 characters" "keywords")))
     (when viewer (participant ctx viewer "viewer"))
     (search/search-page store kw (cond-> opts viewer (assoc :hidden (graph/hidden store viewer)))))))

(defn resume-pending!
  "Resubmits every fan-out the store recorded but did not complete (after a crash); returns the count."
  [{:keys [store fanout]}]
  (reduce (fn [n job] (fanout/submit! fanout job) (inc n)) 0 (feeds/pending-fanouts store)))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: a post's link, edits and deletes

(defn post-link
  "The link of a post: \"/participant/{sender}/outbound/{postId}\"."
  ^String [sender post-id]
  (str "/participant/" sender "/outbound/" post-id))

(defn parse-post-id
  "A post id from the path segment `postId`; a 400 naming it otherwise."
  [s]
  (or (parse-positive-long s)
      (throw (err/bad-request (str "'postId' must be a positive integer id, got " (err/json-text s)) "postId" s))))

(defn post
  "Post `post-id` of participant `id` (its sender), or a 404 naming `postId` (no such post, deleted, or sent by
  another participant)."
  [{:keys [store]} id post-id]
  (let [p (feeds/post store post-id)]
    (if (and p (= (long id) (long (:from p))))
      p
      (throw (err/not-found (str "post " (post-link id post-id) " does not exist") "postId" (post-link id post-id))))))

(defn post-changes
  "The changes of a PATCH body: `subject` and/or `story` (validated as a publish validates them; other keys are
  ignored like a publish ignores them); a 400 when neither is there."
  [limits params]
  (doseq [k [:subject :story]
          :when (and (contains? params k) (nil? (get params k)))]
    ;; present but null: not "required" (a PATCH needs only one), but not a string either
    (throw (err/bad-request (str "'" (name k) "' must be a string, got null: leave it out to keep it") (name k))))
  (let [changes (cond-> {}
                  (contains? params :subject) (assoc :subject (required-string params "subject" (:max-subject-chars limits) false))
                  (contains? params :story) (assoc :story (required-string params "story" (:max-story-chars limits) false)))]
    (when (empty? changes)
      (throw (err/bad-request "'subject' or 'story' is required: the fields to change" "subject")))
    changes))

(defn edit-post!
  "Edits post `post-id` of participant `id` with params {:subject :story} (either or both). Returns the edited
  post; 400 for bad values, 404 as `post`."
  [{:keys [store fanout limits] :as ctx} id post-id params]
  (let [changes (post-changes limits params)
        p (post ctx id post-id)]
    (or (fanout/edit-post! fanout store p changes)
        (throw (err/not-found (str "post " (post-link id post-id) " does not exist") "postId" (post-link id post-id))))))

(defn delete-post!
  "Deletes post `post-id` of participant `id`: from its outbound feed at once, then from every inbound feed and
  the search index. A 404 as `post` (also for a post deleted before: a second DELETE is a 404)."
  [{:keys [store fanout] :as ctx} id post-id]
  (let [p (post ctx id post-id)]
    (or (fanout/delete-post! fanout store p)
        (throw (err/not-found (str "post " (post-link id post-id) " does not exist") "postId" (post-link id post-id))))
    nil))
