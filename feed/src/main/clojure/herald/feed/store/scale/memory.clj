(ns herald.feed.store.scale.memory
  "The :scale SPI on the in-memory store, for roles left in memory: its post log (by ts) and a search mark of 0
  (a memory index starts empty, so the :scale store indexes every post of a durable :feeds backend on open)."
  (:require [herald.feed.store.memory]
            [herald.feed.store.scale.spi :as spi])
  (:import (herald.feed.store.memory MemoryStore)))

(set! *warn-on-reflection* true)

(extend-type MemoryStore
  spi/PostLog
  (-posts-after [m ts limit]
    (->> (vals (:posts @(.-state m)))
         (filter #(> (long (:ts %)) (long ts)))
         (sort-by :ts)
         (take limit)
         vec))

  spi/IndexProgress
  (-indexed-through [_] 0)
  (-set-indexed-through! [_ _] nil))
