(ns herald.feed.quiet
  "Quiets third-party start-up noise before those libraries load: required first by herald.feed."
  (:import (java.util.logging Level Logger)))

(set! *warn-on-reflection* true)

(defonce ^{:doc "Lucene's vectorization logger at SEVERE: Lucene warns on every start that the
  incubating Vector API module is not enabled, and the feed indexes no vectors. Held in this var
  because JUL keeps loggers only weakly (a collected logger would forget its level)."}
  lucene-vectorization-logger
  (doto (Logger/getLogger "org.apache.lucene.internal.vectorization")
    (.setLevel Level/SEVERE)))
