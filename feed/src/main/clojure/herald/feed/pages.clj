(ns herald.feed.pages
  "Pages the service assembles from store reads (issue 11): the inbound feed filtered at read time by the reader's
  hidden set (mutes and blocks), and lists held whole (friends, mutes, blocks) paged by participant id, with the
  stores' cursors (herald.feed.store.cursor), so every page answers the same `Link` header."
  (:require [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.validate :as v]
            [herald.feed.store.cursor :as cursor]))

(set! *warn-on-reflection* true)

(defn visible-inbound
  "A page {:items :next} of recipient's inbound feed without the posts of its hidden set (graph/hidden, the graph
  role; the feeds role for the items): exactly `limit` items while visible ones remain, reading further pages of
  the store (twice as large each time) when items are hidden; :next continues after the last item shown, and is
  nil when no visible item follows it (the items hidden after it are read to know that)."
  [s recipient {:keys [limit before] :as opts}]
  (let [hidden (graph/hidden s recipient)
        limit (long limit)]
    (if (empty? hidden)
      (feeds/inbound s recipient opts)
      (loop [acc [] before before batch (inc limit)]
        (let [{:keys [items next]} (feeds/inbound s recipient (cond-> {:limit batch} before (assoc :before before)))
              acc (into acc (remove #(contains? hidden (:from %))) items)]
          (cond (> (count acc) limit) (let [shown (subvec acc 0 limit)] {:items shown :next (cursor/for-page shown true)})
                (nil? next) {:items acc :next nil}
                :else (recur acc next (min (long v/max-limit) (* 2 (long batch))))))))))

(defn by-id
  "A page {:items :next} of `items` (unique and ascending by (key-fn item), a participant id) after the cursor's id:
  a cursor is (0, the id of the last item shown), one of herald.feed.store.cursor's, so it is checked as the
  feeds' are."
  [items key-fn {:keys [limit before]}]
  (let [after (if before (long (second (cursor/decode before))) 0)
        tail (drop-while #(<= (long (key-fn %)) after) items)
        [shown more] (split-at limit tail)
        shown (vec shown)]
    {:items shown :next (when (and (seq more) (seq shown)) (cursor/encode 0 (key-fn (peek shown))))}))
