(ns herald.feed.quiet
  "Quiets third-party noise before those libraries load: required first by herald.feed and by the backends whose
  libraries log."
  (:import (java.util.logging Level Logger)))

(set! *warn-on-reflection* true)

(defonce ^{:doc "Lucene's vectorization logger at SEVERE: Lucene warns on every start that the
  incubating Vector API module is not enabled, and the feed indexes no vectors. Held in this var
  because JUL keeps loggers only weakly (a collected logger would forget its level)."}
  lucene-vectorization-logger
  (doto (Logger/getLogger "org.apache.lucene.internal.vectorization")
    (.setLevel Level/SEVERE)))

(defonce ^{:doc "HikariCP's ProxyConnection logger at ERROR under slf4j-simple (unless set otherwise): it writes a
  WARN with a full stack trace for every pooled connection a server outage breaks (8 in a row for a pool of 8),
  while herald.feed.outage logs the outage once. Set before HikariCP creates the logger (its first connection)."}
  hikari-proxy-connection-level
  (let [k "org.slf4j.simpleLogger.log.com.zaxxer.hikari.pool.ProxyConnection"]
    (or (System/getProperty k) (do (System/setProperty k "error") "error"))))
