(ns herald.feed.store.fixtures
  "Temporary data directories and embedded stores for the store tests."
  (:require [clojure.java.io :as io]
            [herald.feed.store :as s])
  (:import (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(set! *warn-on-reflection* true)

(defn temp-dir
  "A fresh temporary directory (a string path)."
  [prefix]
  (str (Files/createTempDirectory (str "herald-" prefix) (make-array FileAttribute 0))))

(defn delete-tree!
  "Deletes dir and everything under it."
  [dir]
  (doseq [^java.io.File f (reverse (file-seq (io/file dir)))] (.delete f)))

(def ^:private dirs (atom {}))

(defn open-embedded
  "An embedded store in a fresh temporary directory (removed by close-embedded!); read-your-writes search."
  ([] (open-embedded {}))
  ([opts]
   (let [dir (temp-dir "store")
         st (s/open-store (merge {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4
                                  :index-ram-mb 16 :search-max-lag-ms 0} opts))]
     (swap! dirs assoc st dir)
     st)))

(defn close-embedded!
  "Closes a store from open-embedded and deletes its directory."
  [st]
  (s/close-store! st)
  (some-> (get @dirs st) delete-tree!)
  (swap! dirs dissoc st))
