(ns herald.feed.store.memory
  "The in-memory store: every protocol over one atom; volatile, and the model the other backends must match."
  (:require [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.keys :as keys]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.search :as search]
            [herald.feed.store.clock :as clock]
            [herald.feed.store.cursor :as cursor]
            [herald.feed.store.text :as text]))

(set! *warn-on-reflection* true)

(def ^:private empty-state
  {:seq {:participant 0 :friendship 0 :post 0}
   :last-ts 0
   :participants {}
   :friends {}                  ; id -> sorted {other friendship-id}
   :posts {}                    ; post id -> post
   :outbound {}                 ; sender -> sorted {[(- ts) id] post}
   :inbound {}                  ; recipient -> sorted {[(- ts) id] post}
   :fanouts (sorted-map)        ; post id -> recipients
   :index {}                    ; post id -> {:ts :from :terms #{}}
   :deleted #{}                 ; ids of deleted posts (tombstones: never delivered, shown or indexed again)
   :mutes {}                    ; id -> sorted #{target}
   :blocks {}                   ; id -> sorted #{target}
   :blocked-by {}               ; target -> #{id}
   :keys {}})                   ; [owner key] -> key record {:post :fingerprint :expires-at} (issue 10)

(defn- feed-key [{:keys [ts id]}] [(- (long ts)) id])

(defn- page
  "A page of `feed`; inbound items are resolved by `resolve` (the post's current version, nil when deleted)."
  ([feed opts] (page feed opts val))
  ([feed {:keys [limit before]} resolve]
  (let [from (when before (let [[ts id] (cursor/decode before)] [(- (long ts)) id]))
        s (if from (subseq feed > from) (seq feed))
        items (into [] (comp (keep resolve) (take (inc limit))) s)
        shown (if (> (count items) limit) (pop items) items)]
    {:items shown :next (cursor/for-page shown (> (count items) limit))})))

(defn- put-feed [state role owner post]
  (if (contains? (:deleted state) (:id post))
    state
    (update-in state [role owner] #(assoc (or % (sorted-map)) (feed-key post) post))))

(defn- index-entry [post]
  {:ts (:ts post) :from (:from post) :terms (set (text/terms (text/post-text post)))})

(defn- edit-post [state id changes]
  (if-let [p (get-in state [:posts id])]
    (let [p (merge p changes)]
      (cond-> (-> state (assoc-in [:posts id] p) (put-feed :outbound (:from p) p))
        (get-in state [:index id]) (assoc-in [:index id] (index-entry p))))
    state))

(defn- delete-post [state id]
  (if-let [p (get-in state [:posts id])]
    (-> state (update :posts dissoc id) (update-in [:outbound (:from p)] dissoc (feed-key p))
        (update :fanouts dissoc id) (update :index dissoc id) (update :deleted conj id))
    state))

(defn- publish [state post recipients]
  (let [id (inc (long (get-in state [:seq :post])))
        ts (clock/next-after (:last-ts state))
        post (assoc post :id id :ts ts)]
    (cond-> (-> state (assoc-in [:seq :post] id) (assoc :last-ts ts)
                (assoc-in [:posts id] post) (put-feed :outbound (:from post) post))
      (seq recipients) (assoc-in [:fanouts id] (vec recipients)))))

(defn- live-key
  "The key record of (owner, key) of key request `k` in `state` unless expired at (:now k), or nil."
  [state {:keys [owner key now]}]
  (when-let [r (get-in state [:keys [owner key]])]
    (when (> (long (:expires-at r)) (long now)) r)))

(defn- key-record [k post] {:post post :fingerprint (:fingerprint k) :expires-at (:expires-at k)})

(defn- publish-keyed
  "`state` with post published and its key record, unless a live record of the key exists (then as it is)."
  [state post recipients k]
  (if (live-key state k)
    state
    (let [st (publish state post recipients)]
      (assoc-in st [:keys [(:owner k) (:key k)]] (key-record k (get-in st [:posts (get-in st [:seq :post])]))))))

(defn- reserve-key
  "`state` with key request k's record of its prepared (:post k), unless a live record of the key exists."
  [state k]
  (if (live-key state k) state (assoc-in state [:keys [(:owner k) (:key k)]] (key-record k (:post k)))))

(defn- purge-keys [state now]
  (update state :keys #(into {} (filter (fn [[_ r]] (> (long (:expires-at r)) (long now)))) %)))

(defn- purge-keys!
  "Drops the key records of atom `state` expired at `now`; returns how many (records and reservations share :keys)."
  [state now]
  (let [[old new] (swap-vals! state purge-keys now)] (- (count (:keys old)) (count (:keys new)))))

(defn- keyed-answer
  "The key record after a swap from `old` to `new`: created when `old` had no live record."
  [old new k]
  (assoc (get-in new [:keys [(:owner k) (:key k)]]) :created? (nil? (live-key old k))))

(defn- blocker
  "[blocker blocked] of a block between a and b (either direction), or nil."
  [state a b]
  (cond (get-in state [:blocks a b]) [a b]
        (get-in state [:blocks b a]) [b a]))

(defn- blocked! [[x y]]
  (throw (ex-info (str "participant " x " blocks participant " y)
                  {:type :herald.feed.store/blocked :blocker x :blocked y})))

(defn- befriend [state a b]
  (if (get-in state [:friends a b])
    state
    (let [id (inc (long (get-in state [:seq :friendship])))
          add (fn [m k v] (assoc (or m (sorted-map)) k v))]
      (-> state (assoc-in [:seq :friendship] id)
          (update-in [:friends a] add b id) (update-in [:friends b] add a id)))))

(defn- unfriend [state a b]
  (-> state (update-in [:friends a] dissoc b) (update-in [:friends b] dissoc a)))

(defn- add-to [state k a b] (update-in state [k a] #(conj (or % (sorted-set)) b)))
(defn- drop-from [state k a b] (update-in state [k a] #(disj (or % (sorted-set)) b)))

(defn- relation!
  "Applies (f state) and answers {:from a :target b :created? bool} by whether [k a b] was absent before."
  [state f k a b]
  (let [[old _] (swap-vals! state f)]
    {:from a :target b :created? (not (contains? (get-in old [k a]) b))}))

(defn- unrelate! [state f k a b]
  (let [[old _] (swap-vals! state f)] (contains? (get-in old [k a]) b)))

(deftype MemoryStore [state open?]
  graph/ParticipantStore
  (-create-participant! [this name]
    (let [[_ new] (swap-vals! state #(let [id (inc (long (get-in % [:seq :participant])))]
                                       (-> % (assoc-in [:seq :participant] id)
                                           (assoc-in [:participants id] name))))
          id (get-in new [:seq :participant])]
      {:id id :name name}))
  (-participant [_ id]
    (when-let [name (get-in @state [:participants id])] {:id id :name name}))

  graph/FriendStore
  (-befriend! [_ a b]
    (let [[old new] (swap-vals! state #(if-let [bl (blocker % a b)] (blocked! bl) (befriend % a b)))]
      {:id (get-in new [:friends a b]) :from a :to b :created? (nil? (get-in old [:friends a b]))}))
  (-friends [_ id]
    (mapv (fn [[other fid]] {:id fid :from id :to other}) (get-in @state [:friends id])))

  graph/Relations
  (-unfriend! [_ a b]
    (let [[old _] (swap-vals! state unfriend a b)] (some? (get-in old [:friends a b]))))
  (-mute! [_ a b] (relation! state #(add-to % :mutes a b) :mutes a b))
  (-unmute! [_ a b] (unrelate! state #(drop-from % :mutes a b) :mutes a b))
  (-mutes [_ id] (vec (get-in @state [:mutes id])))
  (-block! [_ a b]
    (relation! state #(-> % (add-to :blocks a b) (add-to :blocked-by b a) (unfriend a b)) :blocks a b))
  (-unblock! [_ a b]
    (unrelate! state #(-> % (drop-from :blocks a b) (drop-from :blocked-by b a)) :blocks a b))
  (-blocks [_ id] (vec (get-in @state [:blocks id])))
  (-hidden [_ id]
    (let [st @state]
      (into (into (set (get-in st [:mutes id])) (get-in st [:blocks id])) (get-in st [:blocked-by id]))))

  feeds/OutboundStore
  (-publish! [_ post recipients]
    (let [[_ new] (swap-vals! state publish post recipients)]
      (get-in new [:posts (get-in new [:seq :post])])))
  (-outbound [_ sender opts] (page (get-in @state [:outbound sender]) opts))
  (-post [_ id] (get-in @state [:posts id]))

  feeds/InboundStore
  (-deliver! [_ recipient post] (swap! state put-feed :inbound recipient post) nil)
  (-fan-out! [_ post recipients]
    (swap! state (fn [st] (-> (reduce #(put-feed %1 :inbound %2 post) st recipients)
                              (update :fanouts dissoc (:id post)))))
    nil)
  (-inbound [_ recipient opts]
    ;; inbound entries stand for the post: shown as its current version, skipped once it is deleted
    (let [st @state] (page (get-in st [:inbound recipient]) opts #(get-in st [:posts (:id (val %))]))))
  (-pending-fanouts [_]
    (let [st @state]
      (map (fn [[id rs]] {:post (get-in st [:posts id]) :recipients rs}) (:fanouts st))))
  (-complete-fanout! [_ post-id] (swap! state update :fanouts dissoc post-id) nil)

  feeds/LoggedFeeds
  (-put-outbound! [_ post]
    (swap! state (fn [st] (if (contains? (:deleted st) (:id post))
                            st
                            (-> st (assoc-in [:posts (:id post)] post) (put-feed :outbound (:from post) post)))))
    nil)
  (-deliver-all! [_ deliveries]
    (swap! state (fn [st]
                   ;; inbound entries show the post as :posts holds it, so that entry is made with them even when
                   ;; the outbound one is left to the caller (:author-copied?)
                   (reduce (fn [st {:keys [post recipients author-copied?]}]
                             (if (contains? (:deleted st) (:id post))
                               st
                               (reduce #(put-feed %1 :inbound %2 post)
                                       (cond-> (update-in st [:posts (:id post)] #(or % post))
                                         (not author-copied?) (put-feed :outbound (:from post) (get-in st [:posts (:id post)] post)))
                                       recipients)))
                           st deliveries)))
    nil)

  keys/KeyedPublish
  (-publish-keyed! [_ post recipients k]
    (let [[old new] (swap-vals! state publish-keyed post recipients k)] (keyed-answer old new k)))
  (-purge-keys! [_ now] (purge-keys! state now))

  keys/KeyReservations
  (-reserve-key! [_ k]
    (let [[old new] (swap-vals! state reserve-key k)] (keyed-answer old new k)))
  (-purge-reservations! [_ now] (purge-keys! state now))

  search/SearchIndex
  (-index! [_ post]
    ;; the current version when this store holds the post (an edit may have overtaken the indexing job)
    (swap! state (fn [st] (if (contains? (:deleted st) (:id post))
                            st
                            (assoc-in st [:index (:id post)] (index-entry (get-in st [:posts (:id post)] post))))))
    nil)
  (-index-batch! [s posts] (run! #(search/-index! s %) posts) nil)
  (-search [_ keywords {:keys [limit]}]
    (let [ks (text/terms keywords)]
      (if (empty? ks)
        []
        (->> (vals (:index @state))
             (filter (fn [{:keys [terms]}] (every? terms ks)))
             (sort-by :ts >)
             (take limit)
             (mapv :from)))))

  (-refresh-search! [_] nil)

  feeds/PostEdits
  (-edit-post! [_ id changes]
    (let [[_ new] (swap-vals! state edit-post id changes)] (get-in new [:posts id])))
  (-delete-post! [_ id]
    (let [[old _] (swap-vals! state delete-post id)] (get-in old [:posts id])))

  feeds/LoggedEdits
  (-delete-outbound! [_ post] (swap! state delete-post (:id post)) nil)
  (-apply-changes! [_ changes]
    (swap! state (fn [st] (reduce (fn [st {:keys [edit delete]}]
                                    (if edit
                                      (edit-post st (:id edit) (select-keys edit [:subject :story]))
                                      (delete-post st (:id delete))))
                                  st changes)))
    nil)

  search/SearchEdits
  (-reindex! [_ post]
    (swap! state (fn [st] (if (contains? (:deleted st) (:id post)) st (assoc-in st [:index (:id post)] (index-entry post)))))
    nil)
  (-unindex! [_ id] (swap! state (fn [st] (-> st (update :index dissoc id) (update :deleted conj id)))) nil)

  search/SearchPages
  (-search-page [_ keywords {:keys [limit before hidden]}]
    (let [ks (text/terms keywords)
          after (when before (cursor/decode before))
          hidden (or hidden #{})
          hits (if (empty? ks)
                 []
                 (->> (:index @state)
                      (keep (fn [[id {:keys [ts from terms]}]]
                              (when (and (every? terms ks) (not (contains? hidden from))
                                         (or (nil? after) (neg? (compare [ts id] after))))
                                {:id id :from from :ts ts})))
                      (sort-by (juxt :ts :id) #(compare %2 %1))
                      (take (inc (long limit)))
                      vec))
          shown (if (> (count hits) (long limit)) (pop hits) hits)]
      {:items shown :next (cursor/for-page shown (> (count hits) (long limit)))}))

  lifecycle/Lifecycle
  (-close! [_] (reset! open? false) nil)
  (-ready? [_] @open?)
  (-stats [_]
    (let [st @state]
      {:participants (count (:participants st)) :posts (count (:posts st))
       :pending-fanouts (count (:fanouts st)) :indexed-posts (count (:index st))})))

(defn memory-store
  "A new, empty in-memory store. Takes no options (config keys are ignored). Not durable: for tests and as
  the model of the contract. Calls after close keep working on the in-memory data."
  ([] (memory-store {}))
  ([_config] (MemoryStore. (atom empty-state) (atom true))))
