(ns herald.feed.store.opensearch-layout-test
  "The OpenSearch index layout of format 2 (issue 10) on a real node: a post's text is searchable but not stored
  (its `_source` is empty), subject and story stay two values (no term spans them), the mark still reads back at
  once, and an index of format 1 still opens (its `text` field takes the new documents) while an unknown format is
  refused."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.servers.opensearch :as node]
            [herald.feed.store :as s]
            [herald.feed.store.opensearch :as os]
            [herald.feed.store.opensearch-test :as ot]
            [herald.feed.store.opensearch.schema :as schema]
            [herald.feed.store.scale.spi :as spi]
            [herald.feed.store.search :as search]))

(set! *warn-on-reflection* true)

(deftest a-post-is-searchable-but-its-text-is-not-stored
  (ot/with-node
    (let [st (ot/open-fresh)]
      (try
        (search/index-batch! st [{:id 7 :from 70 :ts 700 :occurred "2026-11-26" :subject "alpha" :story "beta gamma"}])
        (is (= [70] (search/search st "alpha")) "the subject is searched")
        (is (= [70] (search/search st "GAMMA beta")) "the story is searched")
        (is (= [70] (search/search st "alpha gamma")) "every term, in either value")
        (is (= [] (search/search st "alphabeta")) "subject and story are two values: no term spans them")
        (let [[_ doc] (node/request :get (str "/" (:index st) "/_doc/7"))]
          (is (true? (get doc "found")))
          (is (= 700 (get doc "_version")) "indexed at its ts as external version")
          (is (= {} (get doc "_source")) "nothing of the post is kept in _source"))
        (let [[_ m] (node/request :get (str "/" (:index st) "/_mapping"))]
          (is (= schema/format-version (get-in m [(:index st) "mappings" "_meta" "herald_format"])))
          (is (= #{"id" "from" "ts" "text" "indexed_through"}
                 (set (keys (get-in m [(:index st) "mappings" "properties"]))))
              "no field beyond what searches and the mark read"))
        (spi/-set-indexed-through! st 700)
        (is (= 700 (spi/-indexed-through st)) "the mark is kept in _source and read back before any refresh")
        (finally (ot/drop! st))))))

(deftest an-index-of-format-1-is-still-opened-and-searched
  (ot/with-node
    (let [index (ot/fresh-index)
          body (-> (schema/index-body {:shards 1 :replicas 0 :refresh-interval-ms 2000})
                   (update "mappings" dissoc "_source")
                   (assoc-in ["mappings" "_meta" "herald_format"] 1)
                   (update-in ["mappings" "properties"] merge
                              {"occurred" {"type" "keyword" "index" false "doc_values" false}
                               "subject" {"type" "text" "index" false "copy_to" "text"}
                               "story" {"type" "text" "index" false "copy_to" "text"}}))]
      (try
        (node/request :put (str "/" index) body)
        (let [st (os/open {:url (node/url) :index index :max-lag-ms 0})]
          (try
            (search/index-batch! st [{:id 8 :from 80 :ts 800 :occurred "2026-11-26" :subject "delta" :story "epsilon"}])
            (is (= [80] (search/search st "delta epsilon")) "format 2 documents index the same terms into it")
            (finally (s/close-store! st))))
        (node/request :put (str "/" index "/_mapping") {"_meta" {"herald_format" 3}})
        (let [d (try (s/close-store! (os/open {:url (node/url) :index index})) nil
                     (catch clojure.lang.ExceptionInfo e (ex-data e)))]
          (is (= ::os/incompatible-index (:type d)) "a format this build does not know is refused")
          (is (= 3 (:found d))))
        (finally (node/delete-index! index))))))
