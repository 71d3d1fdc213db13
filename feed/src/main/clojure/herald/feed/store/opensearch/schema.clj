(ns herald.feed.store.opensearch.schema
  "The OpenSearch index of posts: settings, analyzer and mapping (the same terms as herald.feed.store.text), the
  documents, the bulk body and the search request."
  (:require [herald.json :as json]))

(set! *warn-on-reflection* true)

(def format-version
  "The index layout this code creates, recorded in the mapping's _meta under \"herald_format\"; an existing index
  of a version outside `open-formats` (or none) is refused on open. 1: subject/story copied to `text` (standard
  tokenizer + Greek lowercase), sorted by ts and id descending, the indexed-through mark in the document
  progress-id. 2 (issue 10): the same terms, sent as `text` [subject story] (no `subject`, `story` or `occurred`
  field), and a `_source` that keeps only the mark."
  2)

(def open-formats
  "The layouts `open` accepts: this code's, and 1, whose mapping has the same `text` field (the copy_to target), so
  the documents of format 2 index the same terms into it (an index of format 1 keeps its `_source`; reindexing it
  into a new index is only needed to save its disk, docs/feed-scale-opensearch.md)."
  #{1 format-version})

(def progress-id
  "The _id of the document holding the indexed-through mark (spi/IndexProgress). Post ids are decimal numbers,
  so it never collides with a post; it has no `text`, so it never matches a search."
  "herald-indexed-through")

(def analyzer-name "The custom analyzer of the `text` field." "herald_text")

(defn index-body
  "The body of the create-index request: settings (shards, replicas, refresh interval, index sort, analysis) and
  a strict mapping.

  Analysis: the `standard` tokenizer (Lucene's StandardTokenizer, UAX#29 word boundaries, max token length 255)
  then `lowercase` with `language: greek` (Lucene's GreekLowerCaseFilter: lower-cases every code point, folds
  final sigma to sigma and drops tonos): the analysis of herald.feed.store.text. No stop words, no stemming.

  Only `text` is indexed (documents only: no frequencies, positions or norms; hits are sorted by time, never
  scored): its two values are the subject and the story. `from`, `ts` and `id` are doc-value longs for the result
  and the sort. Nothing of a post is kept in `_source` (`includes` only `indexed_through`, the mark's field):
  searches read doc values, never the text. OpenSearch still keeps the document sent as `_recovery_source` until a
  merge prunes it (soft deletes cannot be turned off), so refreshes write the text as before; merged segments hold
  ~1/5 of format 1's bytes per post (docs/feed-scale-opensearch.md). The index is sorted by ts then id, newest
  first, so a search sorted the same way stops after :limit hits per segment."
  [{:keys [shards replicas refresh-interval-ms]}]
  {"settings" {"index" {"number_of_shards" shards
                        "number_of_replicas" replicas
                        "refresh_interval" (if (neg? (long refresh-interval-ms)) "-1" (str refresh-interval-ms "ms"))
                        "sort.field" ["ts" "id"]
                        "sort.order" ["desc" "desc"]}
               "analysis" {"filter" {"herald_greek_lowercase" {"type" "lowercase" "language" "greek"}}
                           "analyzer" {analyzer-name {"type" "custom" "tokenizer" "standard"
                                                      "filter" ["herald_greek_lowercase"]}}}}
   "mappings" {"dynamic" "strict"
               "_meta" {"herald_format" format-version}
               "_source" {"includes" ["indexed_through"]}
               "properties" {"id" {"type" "long" "index" false}
                             "from" {"type" "long" "index" false}
                             "ts" {"type" "long" "index" false}
                             "text" {"type" "text" "analyzer" analyzer-name "index_options" "docs" "norms" false}
                             "indexed_through" {"type" "long" "index" false}}}})

(defn document
  "The document of a stored post: its id, sender and time (doc values) and its searchable text, the subject and
  the story as two values of `text` (each analysed on its own, as `copy_to` from two fields would)."
  [{:keys [id from ts subject story]}]
  {"id" id "from" from "ts" ts "text" [subject story]})

(defn versioned
  "The query string of a write of a post's document at external version `v` (issue 11): OpenSearch refuses it (409)
  when the index holds a higher version of that document, or a delete of it (for `index.gc_deletes`, 60 s by
  default). A post is indexed at its :ts, an edit at a later time (herald.feed.store.clock/edit-version), a delete likewise, so an
  indexing batch that still holds an older version of a post never puts it back."
  [v]
  (str "version=" v "&version_type=external_gte"))

(defn bulk-body
  "The NDJSON body of a _bulk request indexing posts (each under its id: indexing again replaces it), each at
  external version (version-of post) (see `versioned`)."
  ^String [posts version-of]
  (let [sb (StringBuilder.)]
    (doseq [p posts]
      (.append sb "{\"index\":{\"_id\":\"") (.append sb (str (:id p)))
      (.append sb "\",\"version\":") (.append sb (str (long (version-of p))))
      (.append sb ",\"version_type\":\"external_gte\"}}\n")
      (.append sb (json/write-str (document p))) (.append sb "\n"))
    (str sb)))

(defn bulk-failures
  "The failed items of a _bulk response: [{:id post-id-string :status n :error \"type: reason\"}], empty when
  every item succeeded. A 409 (the index holds a newer version of the post, see `versioned`) is no failure: the
  item had nothing to change."
  [resp]
  (if-not (get resp "errors")
    []
    (into []
          (keep (fn [item]
                  (let [r (or (get item "index") (first (vals item)))]
                    (when-let [e (and (not= 409 (get r "status")) (get r "error"))]
                      {:id (get r "_id") :status (get r "status")
                       :error (if (map? e) (str (get e "type") ": " (get e "reason")) (str e))}))))
          (get resp "items"))))

(defn search-body
  "The _search body: posts whose `text` holds every term of keywords (analysed by the field's analyzer; keywords
  without a term match nothing), newest first (ts, then id), only the `from` doc values, no scores, no total, and
  no stored field read (`stored_fields: _none_`: with `_source: false` alone the fetch phase still decompresses each
  hit's stored-fields block for its `_id`: 2.4-2.7x the search's CPU, bench/results/stores.md)."
  [keywords limit]
  {"size" limit
   "track_total_hits" false
   "_source" false
   "stored_fields" "_none_"
   "docvalue_fields" ["from"]
   "sort" [{"ts" "desc"} {"id" "desc"}]
   "query" {"bool" {"filter" [{"match" {"text" {"query" keywords "operator" "and"
                                                 "zero_terms_query" "none"}}}]}}})

(defn search-page-body
  "The _search body of a page (issue 11): as `search-body` with `n` hits, the `id` and `ts` doc values too, after
  the hit sorted at `after` ([ts id], nil for the first page), and none of the senders in `hidden` (ids, nil or
  empty for none: a `must_not` terms query on `from`, which OpenSearch answers from its doc values)."
  [keywords n after hidden]
  (cond-> (assoc (search-body keywords n) "docvalue_fields" ["from" "ts" "id"])
    after (assoc "search_after" after)
    (seq hidden) (assoc-in ["query" "bool" "must_not"] [{"terms" {"from" (vec (sort hidden))}}])))

(defn hits
  "[{:id :from :ts}] of a page's _search response, in hit order."
  [resp]
  (mapv (fn [hit] (let [f #(long (first (get-in hit ["fields" %])))] {:id (f "id") :from (f "from") :ts (f "ts")}))
        (get-in resp ["hits" "hits"])))

(def count-body
  "The _count body of the posts (not the progress document)."
  {"query" {"exists" {"field" "id"}}})

(defn senders
  "The sender ids of a _search response's hits, in hit order."
  [resp]
  (mapv (fn [hit] (long (first (get-in hit ["fields" "from"]))))
        (get-in resp ["hits" "hits"])))
