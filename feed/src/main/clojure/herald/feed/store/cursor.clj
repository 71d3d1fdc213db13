(ns herald.feed.store.cursor
  "Opaque page cursors: the position (ts, post id) of the last item of a page, as a URL-safe string."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(defn encode
  "The cursor that continues a feed after the post with this ts and id."
  ^String [ts id]
  (str (Long/toString (long ts) 36) "." (Long/toString (long id) 36)))

(defn- bad [c cause]
  (throw (ex-info (str "malformed cursor " (pr-str c)) {:type :herald.feed.store/bad-cursor :key :before :value c}
                  cause)))

(defn decode
  "[ts id] from a cursor made by encode; throws ex-info {:type :herald.feed.store/bad-cursor} otherwise."
  [c]
  (if-not (and (string? c) (<= 3 (count c) 40))
    (bad c nil)
    (let [[a b & more] (str/split c #"\." -1)]
      (try
        (let [ts (Long/parseLong a 36) id (Long/parseLong b 36)]
          (if (or more (neg? ts) (not (pos? id))) (bad c nil) [ts id]))
        (catch NumberFormatException e (bad c e))
        (catch NullPointerException e (bad c e))))))

(defn for-page
  "The :next cursor of a page: nil unless more items follow the last one shown."
  [items more?]
  (when (and more? (seq items))
    (let [{:keys [ts id]} (peek items)] (encode ts id))))
