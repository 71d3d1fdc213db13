(ns herald.feed.jobs.perf-local
  "The per-minute job in-process (`:events {:type :local}`): requests go to the job through its herald.flow push input (lock-free, bounded; a full one drops the record, counted), its sink keeps the view and stores closed minutes on disk, read back at start."
  (:require [herald.feed.jobs :as jobs]
            [herald.feed.jobs.minutes :as minutes]
            [herald.feed.jobs.perf :as jperf]
            [herald.flow :as flow])
  (:import (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn- log [& xs] (binding [*out* *err*] (apply println "herald.feed.perf:" xs)))

(defn- sink
  "The `:sink/fn` of the job's output (on its thread): upserts each row, stores the final ones."
  [st {:keys [dir run ^AtomicLong reflected ^AtomicLong store-errors]}]
  (fn [rows]
    (doseq [r rows] (.addAndGet reflected (jperf/upsert! st r)))
    (when-let [finals (and dir (seq (filter :final? rows)))]
      (try (minutes/append! dir (map #(assoc % :run run) finals))
           (catch Exception e
             (when (= 1 (.incrementAndGet store-errors))
               (log "storing closed minutes in" dir "failed (counted; first failure logged):" (str e))))))))

(defn- restore!
  "Loads the stored minutes from `oldest` on into the view (summed over runs); returns how many rows."
  [st dir ^long oldest]
  (minutes/prune! dir oldest)
  (let [rows (minutes/load-rows dir oldest)]
    (doseq [{:keys [minute entity operation] :as r} rows]
      (jperf/add-base! st [minute entity operation] (select-keys r [:histogram :statuses])))
    (when (pos? (long (:skipped (meta rows)))) (log "skipped" (:skipped (meta rows)) "unreadable stored minute lines in" dir))
    (count rows)))

(defn- late ^long [job]
  (long (or (get-in (flow/job-metrics job) [:tasks :per-minute :late]) 0)))

(defn- await-view
  "Waits until every record accepted before the call is reflected in the view or was late. The late
  count comes from the job's metrics, which are costly to read (interval histograms): it is read again
  only when the view has not caught up for two publish periods."
  [{:keys [^AtomicLong reflected ^AtomicLong late-seen publish-ms]} job ^long timeout-ms]
  (let [target (long (:accepted (flow/push-stats job :requests)))
        start (System/currentTimeMillis)
        deadline (+ start timeout-ms)]
    (loop [checked start]
      (let [now (System/currentTimeMillis)]
        (cond (>= (+ (.get reflected) (.get late-seen)) target) true
              (or (>= now deadline) (some? (flow/await-job job 0))) false     ; timed out, or the job ended
              (>= (- now checked) (* 2 (long publish-ms))) (do (.set late-seen (late job)) (recur now))
              :else (do (Thread/sleep 2) (recur checked)))))))

(defn local-recorder
  "The recorder of `herald.feed.jobs.perf/flow-recorder` (which checks and defaults `opts`) with the job
  in-process: stores closed minutes under `:dir` (nil: memory only) and serves the stored ones of earlier
  runs (a minute served by two runs is the sum of both)."
  [{:keys [dir retention-minutes queue-size clock publish-ms] :as o}]
  (let [st (jperf/view retention-minutes)
        rt {:reflected (AtomicLong.) :late-seen (AtomicLong.)
            :store-errors (AtomicLong.) :publish-ms publish-ms :dir dir :run (str (java.util.UUID/randomUUID))}]
    (when dir
      (let [n (restore! st dir (- (quot (long (clock)) 60000) (long retention-minutes)))]
        (when (pos? n) (log "restored" n "stored minute rows from" dir))))
    (let [job (jobs/watch! (flow/submit-job (jobs/perf-job o)
                                            {:inject {:requests {:push/capacity queue-size} :minutes {:sink/fn (sink st rt)}}}))]
      (jperf/recorder
       st
       {:record! (fn [entity op us status at]
                   ;; never waits: a full input refuses (counted as dropped); a closed one or an ended job throws
                   (try (flow/push! job :requests {:entity entity :operation op :us us :status status :at at} 0)
                        (catch clojure.lang.ExceptionInfo _ false)))
        :await (fn [timeout-ms] (await-view rt job timeout-ms))
        :stats (fn [] (let [{:keys [accepted dropped queued]} (flow/push-stats job :requests)]
                        {:recorded accepted :dropped dropped
                         :late (let [n (late job)] (.set ^AtomicLong (:late-seen rt) n) n)
                         :queued queued :store-errors (.get ^AtomicLong (:store-errors rt))}))
        :close! (fn [timeout-ms]
                  (flow/close-input! job :requests)
                  (let [done (flow/await-job job timeout-ms)]
                    (when-not (= :completed (:status done))
                      (log "the per-minute job did not finish in" timeout-ms "ms; its open minutes are lost")
                      (flow/kill-job job))
                    (= :completed (:status done))))}
       o))))
