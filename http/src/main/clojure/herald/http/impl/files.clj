(ns herald.http.impl.files
  "The static file and resource handlers: conditional requests (ETag, Last-Modified), Range (single and
  multipart/byteranges, 416), HEAD, precompressed .br/.gz siblings by Accept-Encoding, index files."
  (:require [clojure.string :as str]
            [herald.http.impl.file-sources :as src])
  (:import (herald.http.files FileParts FileRange RangeStreams)
           (java.nio.charset StandardCharsets)
           (java.time Instant ZoneOffset ZonedDateTime)
           (java.time.format DateTimeFormatter)
           (java.util.concurrent Callable ThreadLocalRandom)))

(set! *warn-on-reflection* true)

(def ^:private max-ranges 16)

(defn- http-date ^String [^long ms]
  (.format DateTimeFormatter/RFC_1123_DATE_TIME (ZonedDateTime/ofInstant (Instant/ofEpochMilli ms) ZoneOffset/UTC)))

(defn- parse-date
  "Seconds since the epoch of an HTTP date (IMF-fixdate), nil when it is not one."
  [^String s]
  (try (.getEpochSecond (Instant/from (.parse DateTimeFormatter/RFC_1123_DATE_TIME (str/trim s))))
       (catch Exception _ nil)))

(defn- etag ^String [asset encoding]
  (str "\"" (Long/toHexString (:modified asset)) "-" (Long/toHexString (:length asset))
       (when-let [crc (:crc asset)] (when (pos? (long crc)) (str "-" (Long/toHexString crc))))
       (when encoding (str "-" encoding)) "\""))

(defn- etag-match?
  "If-None-Match semantics (weak comparison): `*` or one of the listed tags equals `tag`."
  [^String header ^String tag]
  (let [weak #(str/replace-first (str/trim %) #"^W/" "")]
    (boolean (some #(or (= "*" (str/trim %)) (= (weak %) tag)) (str/split header #",")))))

(defn- not-modified? [headers tag ^long modified]
  (if-let [inm (get headers "if-none-match")]
    (etag-match? inm tag)
    (when-let [ims (some-> (get headers "if-modified-since") parse-date)]
      (<= (quot modified 1000) (long ims)))))

(defn- accepts
  "The weight a client's Accept-Encoding `header` gives each coding: a fn coding -> q (0: not acceptable). `*` stands
  for every coding not listed, `x-gzip` for gzip (RFC 9110 12.5.3, 8.4.1.3); no q means 1."
  [^String header]
  (let [ws (into {} (keep (fn [part]
                            (let [[coding & params] (map str/trim (str/split part #";"))
                                  q (some #(when (str/starts-with? (str/lower-case %) "q=") (parse-double (subs % 2)))
                                          params)
                                  c (str/lower-case coding)]
                              (when (seq c) [(if (= "x-gzip" c) "gzip" c) (double (or q 1.0))]))))
                 (str/split header #","))
        any (double (get ws "*" 0.0))]
    (fn [coding] (double (get ws coding any)))))

(defn- parse-ranges
  "Byte ranges of a Range header against `length`: a vector of [first last] (sorted, overlapping ones merged),
  :unsatisfiable, or nil to ignore the header (not bytes, malformed, too many ranges)."
  [^String header ^long length]
  (let [h (str/trim header)]
    (when (and (>= (count h) 6) (.equalsIgnoreCase "bytes=" (subs h 0 6)))
      (let [specs (map str/trim (str/split (subs h 6) #","))
            parsed (map (fn [^String s]
                          (when-let [[_ a b] (re-matches #"(\d{0,18})-(\d{0,18})" s)]
                            (cond (and (= "" a) (= "" b)) ::bad
                                  (= "" a) (let [n (parse-long b)]
                                             (if (zero? n) ::none [(max 0 (- length n)) (dec length)]))
                                  :else (let [a (parse-long a) b (when-not (= "" b) (parse-long b))]
                                          (cond (and b (> a b)) ::bad
                                                (>= a length) ::none
                                                :else [a (min (or b (dec length)) (dec length))])))))
                        specs)]
        (when-not (or (some #(or (nil? %) (= ::bad %)) parsed) (> (count parsed) max-ranges))
          (let [ok (sort (remove #{::none} parsed))]
            (if (empty? ok)
              :unsatisfiable
              (reduce (fn [acc [a b :as r]]
                        (let [[pa pb] (peek acc)]
                          (if (and pb (<= a (inc (long pb)))) (conj (pop acc) [pa (max (long pb) (long b))])
                              (conj acc r))))
                      [] ok))))))))

(defn- if-range-ok? [headers tag modified]
  (let [ir (get headers "if-range")]
    (or (nil? ir)
        (let [ir (str/trim ir)]
          (if (str/starts-with? ir "\"") (= ir tag) (= (parse-date ir) (quot (long modified) 1000)))))))

(defn- slice-body [asset ^long a ^long b]
  (if-let [f (:file asset)]
    (FileRange. f a (inc (- b a)))
    (RangeStreams/slice (src/open-stream asset) a (inc (- b a)))))

(defn- part-head ^bytes [boundary ctype a b len]
  (.getBytes (str "\r\n--" boundary "\r\nContent-Type: " ctype "\r\nContent-Range: bytes " a "-" b "/" len "\r\n\r\n")
             StandardCharsets/ISO_8859_1))

(defn- multipart [asset ranges ctype headers]
  (let [len (:length asset)
        boundary (Long/toHexString (.nextLong (ThreadLocalRandom/current)))
        tail (.getBytes (str "\r\n--" boundary "--\r\n") StandardCharsets/ISO_8859_1)
        parts (-> (into [] (mapcat (fn [[a b]] [(part-head boundary ctype a b len)
                                                (if (:file asset)
                                                  (slice-body asset a b)
                                                  (reify Callable (call [_] (slice-body asset a b))))]))
                        ranges)
                  (conj tail))
        total (+ (long (reduce + (map (fn [p] (if (bytes? p) (alength ^bytes p) 0)) parts)))
                 (long (reduce + (map (fn [[a b]] (inc (- (long b) (long a)))) ranges))))]
    {:status 206
     :headers (assoc headers "Content-Type" (str "multipart/byteranges; boundary=" boundary))
     :body (if (:file asset) (FileParts. parts) (RangeStreams/concat parts))
     ::length total}))

(defn- body-response
  "The 200 or 206/416 answer for `asset` (GET or HEAD)."
  [asset request headers ctype tag]
  (let [len (long (:length asset))
        rh (:headers request)
        get? (= :get (:request-method request))
        ranges (when (and get? (>= len 0) (get rh "range") (if-range-ok? rh tag (:modified asset)))
                 (parse-ranges (get rh "range") len))
        headers (cond-> headers (>= len 0) (assoc "Accept-Ranges" "bytes"))
        stream? (nil? (:file asset))]
    (cond
      (= :unsatisfiable ranges)
      {:status 416 :headers (assoc headers "Content-Range" (str "bytes */" len) "Content-Type" "text/plain; charset=utf-8")
       :body "range not satisfiable\n"}

      (= 1 (count ranges))
      (let [[a b] (first ranges)]
        {:status 206
         :headers (cond-> (assoc headers "Content-Type" ctype "Content-Range" (str "bytes " a "-" b "/" len))
                    stream? (assoc "Content-Length" (str (inc (- (long b) (long a))))))
         :body (slice-body asset a b)})

      (seq ranges)
      (let [r (multipart asset ranges ctype headers)]
        (cond-> (dissoc r ::length) stream? (assoc-in [:headers "Content-Length"] (str (::length r)))))

      :else
      {:status 200
       :headers (cond-> (assoc headers "Content-Type" ctype) stream? (assoc "Content-Length" (str len)))
       :body (cond (:file asset) (:file asset)
                   get? (src/open-stream asset))})))

(defn- pick-encoding
  "[asset encoding vary?]: the .br or .gz sibling of `asset` the client accepts, the one it weighs higher (br on a
  tie), else the asset."
  [lookup segs asset request precompressed?]
  (if-not (and precompressed? (seq segs))
    [asset nil false]
    (let [sib (fn [ext] (let [a (lookup (conj (pop segs) (str (peek segs) ext)))] (when-not (:dir? a) a)))
          br (sib ".br")
          gz (sib ".gz")
          q (accepts (get-in request [:headers "accept-encoding"] ""))
          qbr (if br (q "br") 0.0)
          qgz (if gz (q "gzip") 0.0)]
      ;; the client's weights decide; br wins a tie
      (cond (and (pos? qbr) (>= qbr qgz)) [br "br" true]
            (pos? qgz) [gz "gzip" true]
            :else [asset nil (boolean (or br gz))]))))

(defn- text
  ([status msg] {:status status :headers {"Content-Type" "text/plain; charset=utf-8"} :body msg})
  ([status msg k v] (assoc-in (text status msg) [:headers k] v)))

(defn serve
  "The answer for `request` from `lookup` (see herald.http.impl.file-sources), or nil when the path is not the
  handler's (outside `:prefix`)."
  [lookup {:keys [prefix index-files content-types precompressed? dotfiles? cache-control]} request]
  (let [^String uri (:uri request)]
    (when (.startsWith uri ^String prefix)
      (let [rest (subs uri (count prefix))
            segs (when (or (= "" rest) (str/starts-with? rest "/")) (src/segments (subs rest (min 1 (count rest))) dotfiles?))
            found (when segs (lookup segs))
            [asset segs] (if (:dir? found)
                           (if (str/ends-with? uri "/")
                             (or (some (fn [i] (let [s (conj segs i) a (lookup s)] (when (and a (not (:dir? a))) [a s])))
                                       index-files)
                                 [nil segs])
                             [::redirect segs])
                           ;; a file asked for as a directory (`/a.txt/`) is no file: its relative links would break
                           [(when-not (str/ends-with? uri "/") found) segs])
            method (:request-method request)]
      (cond
        (nil? segs) (text 404 "not found\n")
        (nil? asset) (text 404 "not found\n")
        (not (#{:get :head} method)) (text 405 "method not allowed\n" "Allow" "GET, HEAD")
        (= ::redirect asset) {:status 301
                              :headers {"Location" (str uri "/" (some->> (:query-string request) (str "?")))}
                              :body nil}
        :else
        (let [[chosen enc vary?] (pick-encoding lookup segs asset request precompressed?)
              tag (etag chosen enc)
              headers (cond-> {"ETag" tag "Last-Modified" (http-date (:modified chosen))}
                        vary? (assoc "Vary" "Accept-Encoding")
                        enc (assoc "Content-Encoding" enc)
                        cache-control (assoc "Cache-Control" cache-control))
              ctype (src/content-type content-types (:name asset))]
          (if (not-modified? (:headers request) tag (:modified chosen))
            {:status 304 :headers headers :body nil}
            (body-response chosen request headers ctype tag))))))))

(def ^:private option-specs
  {:prefix [#(and (string? %) (or (= "" %) (and (str/starts-with? % "/") (not (str/ends-with? % "/")))))
            "a String: \"\" or a path starting with / and not ending with /"]
   :index-files [#(and (sequential? %) (every? string? %)) "a vector of file names"]
   :content-types [#(and (map? %) (every? string? (keys %)) (every? string? (vals %)))
                   "a map of extension (no dot) to Content-Type"]
   :precompressed? [boolean? "a boolean"]
   :dotfiles? [boolean? "a boolean"]
   :follow-symlinks? [boolean? "a boolean"]
   :cache-control [#(or (nil? %) (and (string? %) (not (re-find #"[\r\n]" %)))) "a String without CR/LF"]
   :loader [#(instance? ClassLoader %) "a java.lang.ClassLoader"]})

(defn options
  "Validated options with defaults; ex-info {:type :herald.http/invalid-option :key :value} naming a bad key."
  [fn-name opts allowed]
  (doseq [[k v] opts]
    (let [[ok? expected] (when (allowed k) (option-specs k))]
      (when-not ok?
        (throw (ex-info (str "invalid herald.http/" fn-name " option " k " " (pr-str v) ": "
                             (if expected (str "expected " expected) (str "unknown option; known: " (sort allowed))))
                        {:type :herald.http/invalid-option :key k :value v})))
      (when-not (ok? v)
        (throw (ex-info (str "invalid herald.http/" fn-name " option " k " " (pr-str v) ": expected " expected)
                        {:type :herald.http/invalid-option :key k :value v})))))
  (merge {:prefix "" :index-files ["index.html"] :precompressed? true :dotfiles? false :follow-symlinks? false}
         opts
         {:content-types (merge src/content-types (into {} (map (fn [[k v]] [(str/lower-case k) v])) (:content-types opts)))}))

(defn handler
  "A 1- and 3-arity Ring handler serving from `lookup` with validated `opts`."
  [lookup opts]
  (let [answer (fn [request] (or (serve lookup opts request) (text 404 "not found\n")))]
    (fn
      ([request] (answer request))
      ([request respond raise]
       (let [r (try (answer request) (catch Throwable t (raise t) ::raised))]
         (when-not (identical? ::raised r) (respond r)))))))
