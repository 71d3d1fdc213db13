(ns herald.feed.relations
  "The service's relationship operations (issue 11): unfriend, mutes and blocks, and the paged friend lists; the
  graph role of the store does the writes (herald.feed.store.graph `Relations`), this validates and answers the API's
  errors."
  (:require [herald.feed.errors :as err]
            [herald.feed.pages :as pages]
            [herald.feed.service :as svc]
            [herald.feed.store.graph :as graph]))

(set! *warn-on-reflection* true)

(defn- other-id
  "The participant `other` of a path (parsed by the handler) checked against `id`: a 400 when they are the same
  (`what` the verb), a 404 naming the field when either does not exist."
  [ctx id other field what]
  (when (= id other)
    (throw (err/bad-request (str "a participant cannot " what " itself: " (svc/link id)) field (svc/link other))))
  (svc/participant ctx id "id")
  (svc/participant ctx other field)
  other)

(defn- target
  "The participant of a body's `target` (a link, bare id or integer), checked as `other-id`."
  [ctx id params what]
  (let [v (:target params)]
    (cond (nil? v) (throw (err/bad-request "'target' is required" "target"))
          (sequential? v) (throw (err/bad-request (str "'target' must be a single value, got " (count v) " values")
                                                  "target" (vec v))))
    (other-id ctx id (svc/parse-link "target" v) "target" what)))

(defn unfriend!
  "Ends the friendship of participants `id` and `other` (DELETE /participant/{id}/friends/{otherId}): both sides,
  and later posts no longer fan out between them. Not friends is no error (the DELETE is idempotent). A 400 for
  oneself, a 404 for an unknown participant. Returns whether they were friends."
  [{:keys [store] :as ctx} id other]
  (other-id ctx id other "otherId" "unfriend")
  (graph/unfriend! store id other))

(defn mute!
  "`id` mutes the participant of params {:target link}: its posts leave id's inbound feed at read time (also
  those delivered before). Idempotent. Returns {:from id :target other}."
  [{:keys [store] :as ctx} id params]
  (let [t (target ctx id params "mute")]
    (select-keys (graph/mute! store id t) [:from :target])))

(defn unmute!
  "Ends `id`'s mute of `other` (idempotent); the posts show again."
  [{:keys [store] :as ctx} id other]
  (other-id ctx id other "otherId" "unmute")
  (graph/unmute! store id other))

(defn block!
  "`id` blocks the participant of params {:target link}: their friendship ends, each one's posts leave the other's
  inbound feed at read time, and befriending them is a 409 until unblocked. Idempotent. Returns {:from id :target
  other}."
  [{:keys [store] :as ctx} id params]
  (let [t (target ctx id params "block")]
    (select-keys (graph/block! store id t) [:from :target])))

(defn unblock!
  "Ends `id`'s block of `other` (idempotent): the posts show again (a block by `other` stays); the friendship is
  not restored."
  [{:keys [store] :as ctx} id other]
  (other-id ctx id other "otherId" "unblock")
  (graph/unblock! store id other))

(defn friends-page
  "A page {:items [{:id :from id :to other}] :next} of `id`'s friendships, ascending by the friend's id; `opts`
  {:limit :before} from herald.feed.service/page-opts."
  [ctx id opts]
  (pages/by-id (svc/friends ctx id) :to opts))

(defn- relation-page [read {:keys [store] :as ctx} id opts]
  (svc/participant ctx id)
  (pages/by-id (mapv (fn [t] {:from id :target t}) (read store id)) :target opts))

(defn mutes-page
  "A page {:items [{:from id :target other}] :next} of the participants `id` mutes, ascending ids."
  [ctx id opts]
  (relation-page graph/mutes ctx id opts))

(defn blocks-page
  "A page {:items [{:from id :target other}] :next} of the participants `id` blocks, ascending ids."
  [ctx id opts]
  (relation-page graph/blocks ctx id opts))
