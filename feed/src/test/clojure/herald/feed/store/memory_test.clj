(ns herald.feed.store.memory-test
  "The storage contract against the in-memory store, bare and behind the Caffeine cache."
  (:require [herald.feed.store :as s]
            [herald.feed.store.contract :as contract]
            [herald.feed.store.memory :as memory]))

(set! *warn-on-reflection* true)

(contract/deftests memory memory/memory-store s/close-store!)

(contract/deftests memory-cached #(s/open-store {:type :memory}) s/close-store!)
