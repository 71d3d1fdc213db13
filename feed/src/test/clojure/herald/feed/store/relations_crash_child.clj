(ns herald.feed.store.relations-crash-child
  "The child JVM of the relationships' kill -9 test: befriends, mutes, blocks and unmutes on an embedded store and
  prints each acknowledged write."
  (:require [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph])
  (:import (java.io PrintStream)))

(set! *warn-on-reflection* true)

(defn- ack [^PrintStream out & fields]
  (.println out (str (apply str (interpose " " fields)) " ."))
  (.flush out))

(defn -main
  "Args: data-dir. Loops until killed, on a new pair x, y each time: befriend, x posts to y (delivered), x mutes y,
  y blocks x (which ends the friendship), x deletes its post (\"D x y ts id\": y's copy must be gone), and on odd
  rounds x unmutes y."
  [dir]
  (let [st (s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16})
        out System/out]
    (ack out "READY")
    (loop [i 0]
      (let [x (:id (graph/create-participant! st "x")) y (:id (graph/create-participant! st "y"))]
        (graph/befriend! st x y) (ack out "B" x y)
        (let [p (feeds/publish! st {:from x :occurred "2026-11-26" :subject "s" :story "doomed"} [y])]
          (feeds/fan-out! st p [y])
          (graph/mute! st x y) (ack out "M" x y)
          (graph/block! st y x) (ack out "K" x y)
          (s/delete-post! st (:id p)) (ack out "D" x y (:ts p) (:id p)))
        (when (odd? i) (graph/unmute! st x y) (ack out "U" x y)))
      (recur (inc i)))))
