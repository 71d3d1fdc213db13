(ns herald.feed.store.graph
  "The graph role: participants, friendships and relationships (mutes, blocks). Its contract, one protocol each
  (a backend playing the role implements them), then the functions callers use on a store: each validates its
  arguments and calls the role, through the cache role where there is one (lookups, friend lists, hidden sets;
  invalidated after every graph write)."
  (:require [herald.feed.store.cache :as cache]
            [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.validate :as v]))

(set! *warn-on-reflection* true)

;; Ids are positive longs. A participant is {:id :name}; a friendship {:id :from :to}.

(defprotocol ParticipantStore
  "Participants. Guarantees: ids are unique and increasing (never reused, also across restarts); a
  participant is durable when -create-participant! returns; participants are immutable."
  (-create-participant! [s name] "Stores a new participant, returns {:id :name}.")
  (-participant [s id] "Returns {:id :name} or nil."))

(defprotocol FriendStore
  "The social graph. Guarantees: a friendship is symmetric and stored once with one id (listed from both
  sides); -befriend! is idempotent and linearizable per pair, also under concurrent calls (a second call,
  or a racing one, returns the existing friendship with :created? false); durable on return. The store
  does not check that the participants exist (the service does)."
  (-befriend! [s a b] "Befriends a and b (a != b), returns {:id :from a :to b :created? bool}.")
  (-friends [s id] "Returns [{:id :from id :to other}] ordered by the other participant's id."))

(defprotocol Relations
  "The graph role's relationships beyond befriending. Guarantees: every write is idempotent, atomic and durable
  on return; -block! ends the pair's friendship in the same atomic write, and a block and a befriend of one pair
  are linearizable: -befriend! of a pair with a block in either direction throws ex-info
  {:type :herald.feed.store/blocked :blocker x :blocked y} and writes nothing. Mutes and blocks are directed
  (`id` mutes or blocks `target`). The store does not check that the participants exist (the service does)."
  (-unfriend! [s a b] "Ends the friendship of a and b (either order); true when there was one.")
  (-mute! [s id target] "id mutes target; returns {:from id :target target :created? bool}.")
  (-unmute! [s id target] "Ends id's mute of target; true when there was one.")
  (-mutes [s id] "The participants id mutes, ascending ids.")
  (-block! [s id target] "id blocks target and their friendship ends, atomically; returns {:from id :target
  target :created? bool}.")
  (-unblock! [s id target] "Ends id's block of target; true when there was one.")
  (-blocks [s id] "The participants id blocks, ascending ids.")
  (-hidden [s id] "The set of participants whose posts id's inbound feed hides: those id mutes, those id blocks
  and those who block id (one cheap read; `hidden` keeps it in the cache role, invalidated by every write above)."))

;; ---------------------------------------------------------------------------------------------------
;; the graph role's functions on a store (herald.feed.store.lifecycle/role-map)

(defn- cached
  "(load) through the cache role of `s` under key `k` when `s` has one, else (load)."
  [s k load]
  (if-let [c (lc/cache-of s)] (cache/-fetch c k load) (load)))

(defn create-participant!
  "Creates a participant named name (a string, any Unicode), returns {:id :name}. Durable on return."
  [s name]
  (-create-participant! (lc/role s :graph) (v/check-string :name name)))

(defn participant
  "The participant {:id :name} with this id, or nil (graph role, through the cache role when there is one)."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (cached s [:participant id] #(-participant g id))))

(defn befriend!
  "Befriends participants a and b, returns {:id :from a :to b :created? bool}. Idempotent and symmetric:
  (befriend! s b a) after (befriend! s a b) returns the same :id with :created? false. Befriending oneself
  throws ex-info {:type :herald.feed.store/invalid :key :to}; a pair with a block (see `block!`) throws ex-info
  {:type :herald.feed.store/blocked :blocker x :blocked y}."
  [s a b]
  (let [a (v/check-id :from a) b (v/check-id :to b)]
    (when (= a b) (v/invalid (str "a participant cannot befriend itself: " a) :to b))
    (let [r (-befriend! (lc/role s :graph) a b)]
      (when-let [c (lc/cache-of s)]
        ;; always: a racing caller that got :created? false must not read a list cached before the write
        (cache/-invalidate! c [:friends a])
        (cache/-invalidate! c [:friends b]))
      r)))

(defn friends
  "The friendships of participant id as [{:id :from id :to other}], ordered by the other's id."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (cached s [:friends id] #(-friends g id))))

(defn- invalidate!
  "Drops keys ks from the cache role, when there is one, after a graph write: every key even when one fails (the
  first failure is thrown then). -invalidate! waits for a load in flight, so no friend list or hidden set loaded
  before the write is served after it."
  [s ks]
  (when-let [c (lc/cache-of s)]
    (let [errors (into [] (keep #(try (cache/-invalidate! c %) nil (catch Throwable t t))) ks)]
      (when-let [t (first errors)] (throw t)))))

(defn blocked-error?
  "True when `e` is the ex-info a graph role throws for a befriend of a blocked pair (see `Relations`)."
  [e]
  (= :herald.feed.store/blocked (:type (ex-data e))))

(defn unfriend!
  "Graph role. Ends the friendship of a and b (either order): neither lists the other any more and later posts
  do not fan out between them (posts already delivered stay). Returns true when they were friends. Idempotent;
  a == b throws ex-info {:type :herald.feed.store/invalid}."
  [s a b]
  (let [[a b] (v/check-pair a b "unfriend")
        r (boolean (-unfriend! (lc/role s :graph) a b))]
    (invalidate! s [[:friends a] [:friends b]])
    r))

(defn mute!
  "Graph role. `id` mutes `target`: `hidden` of id holds target until `unmute!`. The friendship and the other
  direction are untouched. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (v/check-pair id target "mute")
        r (-mute! (lc/role s :graph) a b)]
    (invalidate! s [[:hidden a]])
    r))

(defn unmute!
  "Graph role. Ends `id`'s mute of `target`; true when there was one. Idempotent."
  [s id target]
  (let [[a b] (v/check-pair id target "unmute")
        r (boolean (-unmute! (lc/role s :graph) a b))]
    (invalidate! s [[:hidden a]])
    r))

(defn mutes
  "Graph role. The participants `id` mutes, ascending ids."
  [s id]
  (vec (-mutes (lc/role s :graph) (v/check-id :id id))))

(defn block!
  "Graph role. `id` blocks `target`: their friendship ends in the same atomic write, `hidden` of each holds the
  other, and `befriend!` of the pair (either order) throws ex-info {:type :herald.feed.store/blocked} until
  `unblock!`. Returns {:from id :target target :created? bool}; idempotent; durable on return."
  [s id target]
  (let [[a b] (v/check-pair id target "block")
        r (-block! (lc/role s :graph) a b)]
    (invalidate! s [[:friends a] [:friends b] [:hidden a] [:hidden b]])
    r))

(defn unblock!
  "Graph role. Ends `id`'s block of `target` (a block by target stays); true when there was one. Does not
  restore the friendship. Idempotent."
  [s id target]
  (let [[a b] (v/check-pair id target "unblock")
        r (boolean (-unblock! (lc/role s :graph) a b))]
    (invalidate! s [[:hidden a] [:hidden b]])
    r))

(defn blocks
  "Graph role. The participants `id` blocks, ascending ids."
  [s id]
  (vec (-blocks (lc/role s :graph) (v/check-id :id id))))

(defn hidden
  "Graph role. The set of participant ids whose posts `id`'s inbound feed hides at read time: those id mutes,
  those id blocks and those who block id."
  [s id]
  (let [g (lc/role s :graph) id (v/check-id :id id)]
    (cached s [:hidden id] #(set (-hidden g id)))))
