(ns herald.feed.store.validate
  "The checks the role namespaces' public functions (herald.feed.store.graph, .feeds, .search, .keys) make of
  their arguments: ids, strings, page options, posts, and the page size limits. A failing check throws ex-info
  {:type :herald.feed.store/invalid :key k :value v}: the service validates its input first, so for a request
  this is a programmer error (a 500 in the log), never a client's message."
  (:require [herald.feed.store.cursor :as cursor]))

(set! *warn-on-reflection* true)

(def default-limit
  "Page size when opts carry no :limit."
  50)

(def max-limit
  "The largest :limit accepted."
  10000)

(defn invalid
  "Throws ex-info `msg` {:type :herald.feed.store/invalid :key key :value value}."
  [msg key value]
  (throw (ex-info msg {:type :herald.feed.store/invalid :key key :value value})))

(defn check-id
  "`id` as a long when it is a positive integer, else throws naming `key`."
  [key id]
  (when-not (and (int? id) (pos? (long id)))
    (invalid (str key " must be a positive long id, got " (pr-str id)) key id))
  (long id))

(defn check-string
  "`s` when it is a string, else throws naming `key`."
  [key s]
  (when-not (string? s) (invalid (str key " must be a string, got " (pr-str s)) key s))
  s)

(defn page-opts
  "`opts` as {:limit n :before cursor-or-nil} (:limit default-limit, 1..max-limit); a malformed cursor throws
  ex-info :herald.feed.store/bad-cursor."
  [opts]
  (let [{:keys [limit before] :or {limit default-limit}} opts]
    (when-not (and (int? limit) (<= 1 (long limit) max-limit))
      (invalid (str ":limit must be an integer in 1.." max-limit ", got " (pr-str limit)) :limit limit))
    (when (some? before) (cursor/decode before))
    {:limit (long limit) :before before}))

(defn check-post
  "`post` when it is a map with a positive :from and string :occurred :subject :story, else throws."
  [post]
  (when-not (map? post) (invalid (str "post must be a map, got " (pr-str post)) :post post))
  (check-id :from (:from post))
  (doseq [k [:occurred :subject :story]] (check-string k (get post k)))
  post)

(defn check-stored-post
  "`post` when it has a positive :id and :from and a long :ts (as a store assigned them), else throws."
  [post]
  (check-id :id (:id post))
  (check-id :from (:from post))
  (when-not (int? (:ts post)) (invalid (str "post :ts must be a long, got " (pr-str (:ts post))) :ts (:ts post)))
  post)

(defn check-recipients
  "The distinct ids of `recipients` (a sequence of positive ids) as a vector, else throws."
  [recipients]
  (when-not (sequential? recipients) (invalid "recipients must be a sequence of ids" :recipients recipients))
  (mapv #(check-id :recipient %) (distinct recipients)))

(defn check-deliveries
  "`deliveries` ({:post stored-post :recipients [ids]} each, `:author-copied? true` kept) validated, as a vector."
  [deliveries]
  (mapv (fn [{:keys [post recipients author-copied?]}]
          (cond-> {:post (check-stored-post post) :recipients (check-recipients recipients)}
            (true? author-copied?) (assoc :author-copied? true)))
        deliveries))

(defn check-changes
  "`changes` when it is a non-empty map of :subject and/or :story strings, else throws."
  [changes]
  (when-not (and (map? changes) (seq changes) (every? #{:subject :story} (keys changes)))
    (invalid (str "changes must be a non-empty map of :subject and/or :story, got " (pr-str changes)) :changes changes))
  (doseq [[k v] changes] (check-string k v))
  changes)

(defn check-pair
  "[a b] as longs when both are ids and a != b (else throws: a participant cannot `what` itself)."
  [a b what]
  (let [a (check-id :id a) b (check-id :target b)]
    (when (= a b) (invalid (str "a participant cannot " what " itself: " a) :target b))
    [a b]))

(defn check-hidden
  "`hidden` (nil or a set of participant ids) as a set of longs, nil when empty; else throws naming :hidden."
  [hidden]
  (when-not (or (nil? hidden) (set? hidden)) (invalid (str ":hidden must be a set of ids, got " (pr-str hidden)) :hidden hidden))
  (not-empty (into #{} (map #(check-id :hidden %)) hidden)))
