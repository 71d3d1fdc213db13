(ns herald.load.impl.agent-wire
  "The agent protocol's framing and messages: every message is one EDN map, sent as a 4-byte big-endian
  length followed by that many bytes of UTF-8 (read with clojure.edn, so a peer can never make us run code);
  and the parsing of the --agents list.

  Protocol version 1, one TCP connection per coordinator and agent:

  | from        | message                                                   | answer / meaning |
  |-------------|-----------------------------------------------------------|------------------|
  | coordinator | {:type :hello :protocol 1 :coordinator NAME}              | {:type :welcome :protocol 1 :agent {..}} or {:type :refused :reason TEXT} (busy, other version) |
  | coordinator | {:type :ping :t MS}                                       | {:type :pong :t MS :agent-ms ITS-CLOCK} (clock offset and round trip) |
  | coordinator | {:type :run :mode :rate/:feed :opts {..} :start-at AGENT-MS} | the agent starts at that instant of its own clock |
  | agent       | {:type :started :agent-ms MS}                             | its load began (start skew) |
  | agent       | {:type :interval :start-s S :end-s E :h BASE64}           | one interval's latency histogram (HdrHistogram's compressed encoding, as in .hlog) |
  | agent       | {:type :result :result {..}} or {:type :error :message TEXT} | the run's result map (histograms included), or why it failed |
  | coordinator | {:type :stop}                                             | stop the run now (Ctrl-C); its result still follows |
  | coordinator | {:type :bye}                                              | {:type :bye} once the agent is free for another coordinator (then both close) |"
  (:require [clojure.edn :as edn]
            [clojure.string :as str])
  (:import (java.io DataInputStream DataOutputStream EOFException)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(def protocol-version
  "The version of the agent protocol this build speaks; an agent refuses a coordinator of another version."
  1)

(def max-frame-bytes
  "The largest frame accepted (a result map with its histograms and intervals stays far below it)."
  (* 64 1024 1024))

(defn write-frame!
  "Sends message map `m` on `out` as one frame (thread-safe: frames of several threads never interleave)."
  [^DataOutputStream out m]
  (let [^String s (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false]
                    (pr-str m))
        b (.getBytes s StandardCharsets/UTF_8)]
    (locking out
      (.writeInt out (alength b))
      (.write out b)
      (.flush out))))

(defn read-frame
  "The next message map from `in`, or nil at the end of the stream. A frame that is too long or not an EDN
  map throws a ::bad-frame ex-info."
  [^DataInputStream in]
  (let [n (try (.readInt in) (catch EOFException _ -1))]
    (cond
      (= n -1) nil
      (not (< 0 n max-frame-bytes)) (throw (ex-info (str "bad frame length " n) {:type ::bad-frame :length n}))
      :else (let [b (byte-array n)
                  _ (.readFully in b)
                  m (try (edn/read-string (String. b StandardCharsets/UTF_8))
                         (catch Exception e (throw (ex-info "frame is not EDN" {:type ::bad-frame} e))))]
              (when-not (and (map? m) (keyword? (:type m)))
                (throw (ex-info "frame is not a message map with a :type" {:type ::bad-frame})))
              m))))

(defn- bad-agents [v why]
  (throw (ex-info (str "bad --agents value " (pr-str v) ": " why " (want host:port,host:port)")
                  {:type :herald.load/bad-option :key :agents :value v})))

(defn- parse-address [v item]
  (let [[_ h6 p6] (re-matches #"\[([0-9A-Fa-f:.]+)\]:([0-9]+)" item)
        [_ h p] (re-matches #"([^:\[\]\s]+):([0-9]+)" item)
        host (or h6 h)
        port (some-> (or p6 p) parse-long)]
    (when-not (and host port) (bad-agents v (str (pr-str item) " is not host:port")))
    (when-not (< 0 (long port) 65536) (bad-agents v (str "port " port " of " (pr-str item) " is not 1..65535")))
    {:host host :port port :name item}))

(defn parse-agents
  "The agents of a comma-separated \"host:port,host:port\" list ([v6]:port too) as [{:host :port :name}];
  a wrong item, a duplicate or an empty list throws a :herald.load/bad-option ex-info naming :agents."
  [v]
  (let [items (remove str/blank? (map str/trim (str/split (str v) #",")))]
    (when (empty? items) (bad-agents v "no agents"))
    (let [agents (mapv #(parse-address v %) items)]
      (when-let [d (first (for [[k n] (frequencies (map :name agents)) :when (> n 1)] k))]
        (bad-agents v (str d " is given twice")))
      agents)))
