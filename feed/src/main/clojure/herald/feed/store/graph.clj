(ns herald.feed.store.graph
  "The graph role's contract: participants, friendships and relationships (mutes, blocks), one protocol each.
  Callers use the public functions of herald.feed.store; a backend playing the graph role implements these.")

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
