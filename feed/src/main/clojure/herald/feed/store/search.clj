(ns herald.feed.store.search
  "The search role's contract: the keyword index, its edits, paged search, and the search progress a store
  without a log keeps. Callers use the public functions of herald.feed.store; a backend playing the search role
  implements SearchIndex, SearchEdits and SearchPages.")

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
