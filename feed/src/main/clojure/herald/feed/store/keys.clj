(ns herald.feed.store.keys
  "The idempotency keys' contract (issue 10: `Idempotency-Key` on POST /participant/{id}/outbound): a key, scoped
  to its participant, durably names the one post its first request published. Two capabilities, one per way a post
  is recorded: `KeyedPublish` on the feeds role when the store is the post's record (the local log: memory,
  embedded), `KeyReservations` on the graph role when the record is a log outside the store (Kafka: memory,
  PostgreSQL). The contract, then the functions callers use on a store; docs/adr/0014-idempotency-keys.md says why."
  (:require [herald.feed.store.feeds :as feeds]
            [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.search :as search]
            [herald.feed.store.validate :as v]))

(set! *warn-on-reflection* true)

;; A key request `k` is {:owner <participant id> :key <1-255 visible ASCII chars> :fingerprint <string: the
;; request's fields> :now <epoch ms> :expires-at <epoch ms>}. A key record is {:post <stored post> :fingerprint
;; <the first request's> :expires-at <ms>} plus :created? (true when this call wrote it). A record whose
;; :expires-at is not after `now` counts as absent: the key may name a new post.

(defprotocol KeyedPublish
  "The feeds role's publish under an idempotency key. Guarantees: -publish-keyed! is -publish! (OutboundStore) with
  the key record written in the SAME atomic, durable write as the post and its pending fan-out: after any crash
  either both exist or neither. When a live record of (owner, key) exists it writes nothing and returns that
  record (:created? false), whatever the fields; concurrent calls with one key write one post (linearizable per
  key)."
  (-publish-keyed! [s post recipients k] "The key record of (owner, key): the existing live one, or the new one for
  `post` (validated fields, without :id/:ts) published to `recipients` with :id and :ts assigned.")
  (-purge-keys! [s now] "Deletes the key records expired at `now` (epoch ms); returns how many (a best effort:
  expired records are ignored anyway)."))

(defprotocol KeyReservations
  "The graph role's key reservations, for a post recorded on a log outside the store. Guarantees: -reserve-key!
  inserts the record {:post :fingerprint :expires-at} of (owner, key) unless a live one exists, atomically and
  durably (linearizable per key: of concurrent calls one record wins, every call returns it), and returns the
  record that holds after the call (:created? true when this call's). The caller appends the record's post to the
  log only after it holds, so a retry after any failure finds the same post (same :id and :ts) and appends it
  again: the log's readers upsert by post id, so a second record is harmless."
  (-reserve-key! [s k] "The live key record of (owner, key): the existing one, or `k`'s (:post a prepared post
  with :id and :ts) newly written.")
  (-purge-reservations! [s now] "Deletes the reservations expired at `now` (epoch ms); returns how many."))

;; ---------------------------------------------------------------------------------------------------
;; the functions on a store (herald.feed.store.lifecycle/role-map)

(defn keyed-publish?
  "True when the feeds role of `s` has `KeyedPublish` (a post and its key record in one atomic write)."
  [s]
  (satisfies? KeyedPublish (lc/feeds-of s)))

(defn key-reservations?
  "True when the graph role of `s` has `KeyReservations` (a key reserved before a post goes on an outside log)."
  [s]
  (satisfies? KeyReservations (if (lc/role-map? s) (:graph s) s)))

(defn publish-keyed!
  "Feeds role (`KeyedPublish`): herald.feed.store.feeds/publish! of `post` for `recipients` under the key
  request `k` (see above), the post, its pending fan-out and its key record in one atomic durable write; or,
  when (owner, key) names a live record, that record and no write. Returns the key record {:post :fingerprint
  :expires-at :created?}."
  [s post recipients k]
  (let [f (lc/role s :feeds)
        post (feeds/new-post post)
        recipients (v/check-recipients recipients)]
    (if-let [p (lc/progress-of s)]
      (let [rec (volatile! nil)]
        ;; a repeat stores no post (nil to the tracker), so search does not wait for one
        (search/-tracked-publish! p #(let [r (vreset! rec (-publish-keyed! f post recipients k))]
                                       (when (:created? r) (:post r))))
        @rec)
      (-publish-keyed! f post recipients k))))

(defn reserve-key!
  "Graph role (`KeyReservations`): the live key record of (owner, key) of key request `k`, written with `k`'s
  :post (a prepared post with :id and :ts, validated here) when there is none. Returns {:post :fingerprint
  :expires-at :created?}."
  [s k]
  (-reserve-key! (lc/role s :graph) (update k :post v/check-stored-post)))

(defn purge-keys!
  "Deletes the key records and reservations expired at `now` (epoch ms) from whichever roles of `s` keep them;
  returns how many."
  [s now]
  (+ (long (if (keyed-publish? s) (-purge-keys! (lc/role s :feeds) now) 0))
     (long (if (key-reservations? s) (-purge-reservations! (lc/role s :graph) now) 0))))
