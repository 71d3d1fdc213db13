(ns herald.feed.store.crash-child
  "The child JVM of the kill -9 test: writes to an embedded store and prints each acknowledged write."
  (:require [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search])
  (:import (java.io PrintStream)))

(set! *warn-on-reflection* true)

(defn- ack [^PrintStream out & fields]
  (.println out (str (apply str (interpose " " fields)) " ."))
  (.flush out))

(defn -main
  "Args: data-dir. Loops until killed: participant, friendship, post (+ index, + fan-out every other one)."
  [dir]
  (let [st (s/open-store {:type :embedded :data-dir dir :index-commit-ms 600000 :block-cache-mb 8
                          :write-buffer-mb 4 :index-ram-mb 16})
        out System/out]
    (ack out "READY")
    (loop [i 0 prev nil]
      (let [p (:id (graph/create-participant! st (str "name-" i)))]
        (ack out "P" p (str "name-" i))
        (when prev (ack out "F" prev p (:id (graph/befriend! st prev p))))
        (let [post (feeds/publish! st {:from p :occurred "2026-11-22" :subject "crash"
                                   :story (str "story tok" i " of the crash test")} (if prev [prev] []))]
          (ack out "O" (:id post) p (or prev 0) i)
          (when (odd? i) (search/index! st post) (ack out "I" (:id post)))
          (when (and prev (even? i)) (feeds/fan-out! st post [prev]) (ack out "D" (:id post))))
        (recur (inc i) p)))))
