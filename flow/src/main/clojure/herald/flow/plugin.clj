(ns herald.flow.plugin
  "The built-in plugins: in-memory seq and bounded-queue inputs, the durable local log input, function and collecting sinks.

  Each var is a constructor named in a task map by `:task/plugin`, e.g.
  `{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :seq/segments [...]}`.
  Live values (a queue, an atom, a fn) are best given through `submit-job`'s `:inject` option so that the
  job itself stays plain data."
  (:require [herald.flow.impl.log :as log]
            [herald.flow.impl.push :as push]
            [herald.flow.impl.types :as t]
            [herald.flow.spi :as spi])
  (:import (java.util ArrayList)
           (java.util.concurrent BlockingQueue TimeUnit)))

(set! *warn-on-reflection* true)

(defn- segments?
  "True for a finite collection of segments given as a seqable (not nil, not a string, not one map)."
  [x]
  (and (some? x) (seqable? x) (not (string? x)) (not (map? x))))

(defn seq-input
  "An input over a finite collection, replayable (its position is the count read).

  | key | type | default | meaning |
  |---|---|---|---|
  | `:seq/segments` | seqable of maps | required | the segments, in order |"
  [task]
  (let [all (spi/option task :seq/segments segments? "a collection of segments (maps)")
        remaining (volatile! (seq all)) pos (volatile! 0)]
    (reify spi/Input
      (-poll! [_ max-n _]
        (when-let [s @remaining]
          (let [batch (into [] (take max-n) s)]
            (vreset! remaining (seq (drop (count batch) s)))
            (vswap! pos + (count batch))
            batch)))
      (-position [_] @pos)
      (-seek! [_ p] (vreset! pos p) (vreset! remaining (seq (drop p all))))
      (-close-input! [_]))))

(def end-of-input
  "Put this value into a `queue-input`'s queue to end the input."
  ::end)

(defn queue-input
  "An input draining a `java.util.concurrent.BlockingQueue` (bounded: producers block when it is full). Not
  replayable: a resumed job does not see what an earlier run took. Put `end-of-input` to finish. Its lag is
  the queue's size.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:queue/queue` | BlockingQueue | required | the queue producers `put` segments into |"
  [task]
  (let [^BlockingQueue q (spi/option task :queue/queue #(instance? BlockingQueue %) "a java.util.concurrent.BlockingQueue")
        done (volatile! false)]
    (reify
      spi/Lag
      (-lag [_] (.size q))
      spi/Input
      (-poll! [_ max-n timeout-ms]
        (when-not @done
          (let [out (ArrayList.)
                first-seg (.poll q (long timeout-ms) TimeUnit/MILLISECONDS)]
            (when (some? first-seg) (.add out first-seg) (.drainTo q out (dec (long max-n))))
            (let [ended (some #(identical? ::end %) out)]
              (when ended (vreset! done true))
              (if (and ended (= 1 (count out))) nil (into [] (remove #(identical? ::end %)) out))))))
      (-position [_] nil)
      (-seek! [_ _])
      (-close-input! [_]))))

(defn push-input
  "An input that callers push segments into while the job runs, with backpressure: `herald.flow/push!`
  waits while its bounded buffer is full (or refuses at once with a zero timeout), `herald.flow/close-input!`
  ends it once drained. Producers take no lock and wake nobody: when the buffer is empty a poll sleeps
  `:push/min-wait-ms` after a poll that found segments, twice as long after each empty one, at most the
  task's `:task/batch-timeout-ms` (what an idle job costs, and the most a segment waits after an idle
  spell). Not replayable. Its lag is the number of segments waiting.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:push/capacity` | pos-int | 10000 | segments the buffer holds before `push!` waits |
  | `:push/min-wait-ms` | pos-int | 1 | the first sleep on an empty buffer after a busy poll |"
  [task]
  (let [cap (spi/option task :push/capacity #(or (nil? %) (pos-int? %)) "a positive integer")
        min-wait (spi/option task :push/min-wait-ms #(or (nil? %) (pos-int? %)) "a positive integer (milliseconds)")]
    (push/push-input (or cap 10000) (or min-wait 1))))

(defn log-input
  "An input reading a durable local log (see `herald.flow/open-log`), replayable: its position is the log
  offset, stored in each snapshot, so a resumed job reads on from its last snapshot. Never exhausted.

  | key | type | default | meaning |
  |---|---|---|---|
  | `:log/dir` | string | required | the log's directory |
  | `:log/start-from` | `:earliest` or `:latest` | `:earliest` | where a job with no snapshot starts |
  | `:log/poll-ms` | pos-int | 100 | longest wait for an append within one poll (appends in this JVM wake it at once; the task's `:task/batch-timeout-ms` bounds it too) |"
  [task]
  (let [dir (spi/option task :log/dir string? "a directory path string")
        from (spi/option task :log/start-from #(contains? #{nil :earliest :latest} %) ":earliest or :latest")
        poll-ms (long (or (spi/option task :log/poll-ms #(or (nil? %) (pos-int? %)) "a positive integer (milliseconds)") 100))
        r (log/reader dir 0)
        shared (log/shared-log dir {})]
    (when (= from :latest) (log/seek! r (log/end-offset shared)))
    (reify
      spi/Lag
      (-lag [_] (max 0 (- (log/end-offset shared) (log/position r))))
      spi/Progress
      (-read-past [_] (let [end (long (log/end-offset shared))] (fn [] (>= (long (log/position r)) end))))
      spi/Input
      (-poll! [_ max-n timeout-ms]
        (let [b (log/read-batch r max-n)]
          (if (or (seq b) (zero? (long timeout-ms)))
            b
            (do (log/await-append shared (min (long timeout-ms) (long poll-ms)))
                (log/read-batch r max-n)))))
      (-position [_] (log/position r))
      (-seek! [_ p] (log/seek! r (long p)))
      (-close-input! [_] (log/close-reader! r)))))

(defn fn-output
  "An output calling a fn with each batch (a vector of segments).

  | key | type | default | meaning |
  |---|---|---|---|
  | `:sink/fn` | fn or namespaced keyword naming one | required | `(f segments)`, called on the task's thread |
  | `:sink/flush-fn` | fn or keyword | none | `(f)` at each epoch barrier, before the snapshot |"
  [task]
  (let [as-fn (fn [k] (let [v (get task k)]
                        (cond (nil? v) nil (fn? v) v
                              :else (t/fn-ref! [:catalog (:task/name task) k] k v))))
        f (or (as-fn :sink/fn) (spi/option task :sink/fn some? "a fn of a batch"))
        flush-fn (as-fn :sink/flush-fn)]
    (reify spi/Output
      (-write! [_ segments] (f segments))
      (-flush! [_] (when flush-fn (flush-fn)))
      (-close-output! [_] (when flush-fn (flush-fn))))))

(defn collecting-output
  "An output appending every segment to a vector held in an atom (tests, REPL).

  | key | type | default | meaning |
  |---|---|---|---|
  | `:sink/atom` | atom of a vector | required | receives the segments |"
  [task]
  (let [a (spi/option task :sink/atom #(instance? clojure.lang.IAtom %) "an atom")]
    (reify spi/Output
      (-write! [_ segments] (swap! a into segments))
      (-flush! [_])
      (-close-output! [_]))))

(defn discard-output
  "An output that drops every segment (benchmarks)."
  [_]
  (reify spi/Output (-write! [_ _]) (-flush! [_]) (-close-output! [_])))
