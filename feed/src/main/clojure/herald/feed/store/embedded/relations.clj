(ns herald.feed.store.embedded.relations
  "The embedded store's relationships (issue 11) on RocksDB: unfriend, mutes and blocks as pair entries, each write
  one atomic WriteBatch; the callers hold the pair's stripe lock (see herald.feed.store.embedded)."
  (:require [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.rocks :as rocks])
  (:import (org.rocksdb WriteBatch)))

(set! *warn-on-reflection* true)

(def ^:private marker
  "The value of a relationship entry (its version byte)."
  (byte-array [1]))

(defn- related? [db family a b] (some? (rocks/get-bytes db family (c/pair-key a b))))

(defn check-block!
  "Throws ex-info {:type :herald.feed.store/blocked :blocker :blocked} when a or b blocks the other."
  [db a b]
  (when-let [[x y] (cond (related? db :blocks a b) [a b] (related? db :blocks b a) [b a])]
    (throw (ex-info (str "participant " x " blocks participant " y)
                    {:type :herald.feed.store/blocked :blocker x :blocked y}))))

(defn others
  "The second ids of owner's entries in family, ascending."
  [db family owner]
  (mapv (fn [[k _]] (c/key-long k 8)) (rocks/scan db family (c/long-key owner) #(c/owner-prefix? % owner) Long/MAX_VALUE)))

(defn- write-pairs!
  "One atomic, durable write of [op family a b] entries, op :put (a marker) or :delete."
  [db entries]
  (with-open [wb (WriteBatch.)]
    (doseq [[op family a b] entries]
      (let [h ^org.rocksdb.ColumnFamilyHandle (get-in db [:cfs family])]
        (if (= :put op)
          (.put wb h (c/pair-key a b) ^bytes marker)
          (.delete wb h (c/pair-key a b)))))
    (rocks/write! db wb)))

(defn- end-friendship
  "The entries that end the friendship of a and b, when they are friends: both friends entries deleted, both
  `former` entries put (a later delete of a post of either removes the other's inbound copy of it)."
  [db a b]
  (when (related? db :friends a b)
    [[:delete :friends a b] [:delete :friends b a] [:put :former a b] [:put :former b a]]))

(defn unfriend!
  "Ends the friendship of a and b (see `end-friendship`) in one write; true when they were friends. The
  friendships record stays (its id is never reused)."
  [db a b]
  (let [entries (end-friendship db a b)]
    (when entries (write-pairs! db entries))
    (some? entries)))

(def ^:private extra
  "What a relationship entry writes besides itself: a block ends the friendship and is indexed by its target."
  {:mutes (fn [_ _ _] [])
   :blocks (fn [db a b] (into [[:put :blocked-by b a]] (end-friendship db a b)))})

(defn add!
  "Adds a's entry of b in family (:mutes or :blocks) with what it implies, in one write; {:from :target :created?}."
  [db family a b]
  (let [had? (related? db family a b)]
    (write-pairs! db (into [[:put family a b]] ((extra family) db a b)))
    {:from a :target b :created? (not had?)}))

(defn remove!
  "Removes a's entry of b in family (:mutes or :blocks; a block's blocked-by entry too); true when there was one."
  [db family a b]
  (let [had? (related? db family a b)]
    (when had?
      (write-pairs! db (cond-> [[:delete family a b]] (= :blocks family) (conj [:delete :blocked-by b a]))))
    had?))

(defn hidden
  "The participants whose posts id's inbound feed hides: those it mutes or blocks and those who block it."
  [db id]
  (into (set (others db :mutes id)) (concat (others db :blocks id) (others db :blocked-by id))))
