(ns herald.feed.store.search
  "The search role: the keyword index, its edits, paged search, and the search progress a store without a log
  keeps. Its contract (a backend playing the role implements SearchIndex, SearchEdits and SearchPages), then the
  functions callers use on a store: each validates its arguments, calls the role and reports to the store's
  SearchProgress when it has one."
  (:require [herald.feed.store.lifecycle :as lc]
            [herald.feed.store.validate :as v]))

(set! *warn-on-reflection* true)

(defprotocol SearchIndex
  "Keyword search over subject and story. Guarantees: -index! is idempotent by post id; visibility is
  near-real-time: a post indexed at least the backend's lag before -search is called is found by it (the
  memory store and an embedded store opened with :search-max-lag-ms 0 are read-your-writes; the embedded
  default lag is 1 s); the index is derived data: an embedded backend catches up on open with every
  published post not yet committed to the index, so callers never need to re-index after a crash. Terms are Unicode words (Lucene's StandardAnalyzer: UAX#29 word
  boundaries, lower-cased); a post matches when EVERY keyword term occurs in its subject or story."
  (-index! [s post] "Makes post searchable (idempotent by :id).")
  (-index-batch! [s posts] "Makes every post of posts searchable (idempotent by :id), as -index! on each.")
  (-search [s keywords opts] "Sender ids of matching posts, one per post (repeats kept), newest first; opts {:limit n}.")
  (-refresh-search! [s] "Makes every post indexed before the call visible to the next searches."))

(defprotocol SearchEdits
  "The search role's side of edits and deletes: a post's document replaced or removed. Idempotent by post
  id; visible within the backend's lag, like -index!."
  (-reindex! [s post] "Replaces the document of (:id post) by post's (adds it when absent).")
  (-unindex! [s id] "Removes the document of post `id` (nothing when absent)."))

(defprotocol SearchPages
  "The search role's paged search: like -search, with a cursor. Guarantees as SearchIndex; the cursor is the
  (ts, post id) of the last hit shown (herald.feed.store.cursor), hits are ordered newest first by (ts, id)."
  (-search-page [s keywords opts] "A page {:items [{:id post-id :from sender}] :next cursor} (items may carry :ts) of the
  newest posts matching every keyword term, older than opts' :before cursor when given, leaving out the posts of the
  senders in opts' :hidden (a set of ids, nil or empty for none) in the search itself, so that a page holds :limit
  items while matching posts of other senders remain; opts {:limit :before :hidden}."))

(defprotocol SearchProgress
  "The search role's bookkeeping where the store itself tracks which published posts wait for the index (the
  :scale store without a log keeps a search mark, herald.feed.store.scale): every publish and every indexing
  through the store's public functions report to it. With a log (Kafka) the log's offsets are the progress and a
  store has no SearchProgress."
  (-tracked-publish! [p publish] "Calls (publish), which stores a post and returns it, recording the post as waiting for search; returns it. A (publish) that returns nil stored no post (a repeat under an idempotency key): nothing waits.")
  (-indexed! [p posts] "Records posts as searchable."))

;; ---------------------------------------------------------------------------------------------------
;; the search role's functions on a store (herald.feed.store.lifecycle/role-map)

(defn index!
  "Makes post (as returned by herald.feed.store.feeds/publish!) searchable. Idempotent by post id."
  [s post]
  (-index! (lc/role s :search) (v/check-stored-post post))
  (some-> (lc/progress-of s) (-indexed! [post]))
  nil)

(defn index-batch!
  "Makes every post of posts (a sequential collection of posts as returned by feeds/publish!) searchable, with
  the guarantees of index! for each of them:
  - idempotent by post id: a post already indexed, or repeated in posts, is indexed once;
  - visible to searches within the backend's lag (:search-max-lag-ms) after the call returns;
  - a post whose indexing fails does not fail the others and does not throw: the embedded backend counts
    the failure (:index-errors, /ready false), retries the post before its next commit and, beyond that,
    indexes it again on the next open (the index is derived data; nothing is lost);
  - every post is validated before any is indexed: a malformed one throws ex-info
    {:type :herald.feed.store/invalid} and nothing of the batch is indexed.
  Posts may come in any order and from concurrent callers. The embedded backend adds the whole batch in one
  Lucene call under one lock, so it costs less per post than index! on each; batches of 10-500 posts suit
  it. Returns nil."
  [s posts]
  (when-not (sequential? posts) (v/invalid "posts must be a sequential collection of posts" :posts posts))
  (run! v/check-stored-post posts)
  (when (seq posts)
    (-index-batch! (lc/role s :search) posts)
    (some-> (lc/progress-of s) (-indexed! posts)))
  nil)

(defn search
  "Sender ids of the posts whose subject or story contain every term of keywords (a string), one per
  matching post (a sender may repeat), newest first. Keywords without any word give [].

  | key    | type | default | meaning               |
  |--------|------|---------|-----------------------|
  | :limit | int  | 50      | most results, 1..10000 |"
  ([s keywords] (search s keywords nil))
  ([s keywords opts]
   (-search (lc/role s :search) (v/check-string :keywords keywords) (select-keys (v/page-opts (dissoc opts :before)) [:limit]))))

(defn search-page
  "Search role. A page {:items [{:id :from}] :next cursor} (items may carry :ts) of the posts whose subject or story
  contain every term of keywords, newest first; opts {:limit n :before cursor} as herald.feed.store.feeds/outbound (:before the :next of
  the previous page), and :hidden, a set of participant ids whose posts the page leaves out (a searcher's
  `hidden`): the page still holds :limit items while other matches remain. Keywords without any word give an
  empty page."
  ([s keywords] (search-page s keywords nil))
  ([s keywords opts]
   (-search-page (lc/role s :search) (v/check-string :keywords keywords)
                        (assoc (v/page-opts opts) :hidden (v/check-hidden (:hidden opts))))))

(defn refresh-search!
  "Makes every post indexed before this call visible to the searches that follow (whatever the backend's
  visibility lag): for tests and admin tools, not the request path. Returns nil."
  [s]
  (-refresh-search! (lc/role s :search))
  nil)

(defn reindex!
  "Search role (`SearchEdits`): replaces the document of post (:id post) (as returned by edit-post!). Idempotent."
  [s post]
  (-reindex! (lc/role s :search) (v/check-stored-post post))
  nil)

(defn unindex!
  "Search role (`SearchEdits`): removes the document of post `id` from the search index. Idempotent."
  [s id]
  (-unindex! (lc/role s :search) (v/check-id :id id))
  nil)
