(ns herald.load.impl.feed
  "The reference news feed workload: closed-loop simulated users over HTTP, each a broadcaster (creates
  participants, befriends them, posts outbound items), a searcher (keyword searches) or, herald's addition,
  a reader (inbound/outbound/friends GETs); optional global rate cap. Optional shares of a broadcaster's outbound
  operations edit (PATCH), delete or read (GET) the link of a post it published earlier. Every request is recorded as
  (entity, operation, status, latency)."
  (:require [clojure.string :as str]
            [herald.load.impl.feed-record :as rec]
            [herald.json :as json]
            [herald.load.impl.jwt :as jwt]
            [herald.load.impl.request :as request]
            [herald.load.impl.words :as words])
  (:import (herald.load.client RequestFailure Response SessionClient SessionGroup Target)
           (io.netty.channel EventLoopGroup)
           (java.net URLEncoder)
           (java.nio.charset StandardCharsets)
           (java.time LocalDate)
           (java.util Random)
           (java.util.concurrent ExecutionException)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(defn- form-encode [m]
  (str/join "&" (for [[k v] m] (str (name k) "=" (URLEncoder/encode (str v) StandardCharsets/UTF_8)))))

(defn json-body
  "The UTF-8 JSON bytes of a request body `m` (the workload's maps of Strings), through herald.json's String writer
  and String.getBytes: 1.0-1.2 us of CPU for a 150-word post in a running generator, against 3.6-4.5 us through
  herald.json/write-bytes (Jackson's byte generator, slower in a Clojure JVM with tiered compilation) and 1.8-2.0 us
  through herald-load's writer before herald.json (CHANGELOG, 2026-11-26). The bytes are write-bytes's, except that
  characters outside the BMP are raw UTF-8 where write-bytes writes \\u escapes: the same JSON value."
  ^bytes [m]
  (.getBytes (json/write-str m) StandardCharsets/UTF_8))

(defn- body-of
  "A request's headers and body for the fields `m`: JSON (`json-body`) or a form."
  [{:keys [body-format]} m]
  (if (= body-format :form)
    {:headers {"Content-Type" "application/x-www-form-urlencoded"} :body (form-encode m)}
    {:headers {"Content-Type" "application/json"} :body (json-body m)}))

;; every entity x operation the workload records, its key computed once (feed-record/op)
(def ^:private participant-post (rec/op "participant" "post"))
(def ^:private friends-post (rec/op "friends" "post"))
(def ^:private outbound-post (rec/op "outbound" "post"))
(def ^:private outbound-patch (rec/op "outbound" "patch"))
(def ^:private outbound-delete (rec/op "outbound" "delete"))
(def ^:private outbound-get-one (rec/op "outbound" "get-one"))
(def ^:private outbound-search (rec/op "outbound" "search"))
(def ^:private feed-gets [[(rec/op "inbound" "get") "/inbound"] [(rec/op "outbound" "get") "/outbound"]
                          [(rec/op "friends" "get") "/friends"]])

(defn- slot!
  "The System/nanoTime at which the next request may go out: the next slot of the global rate cap (taken now), or
  `now` without a cap. The session's event loop holds the request until then (SessionClient.send): no thread sleeps
  and is woken to pace it."
  ^long [{:keys [^AtomicLong next-slot cap-interval]} ^long now]
  (if next-slot
    (max now (.getAndUpdate next-slot (reify java.util.function.LongUnaryOperator
                                        (applyAsLong [_ prev] (+ (max prev now) (long cap-interval))))))
    now))

(defn response-field
  "Top-level field `field` (a name) of the JSON object in the response body `b`: herald.json/read-field, which
  reads only up to that field; nil when it is missing, or the body is no object or not JSON (the workload then
  goes on without the value, as for any failed request)."
  [^bytes b ^String field]
  (try (json/read-field b field)
       (catch clojure.lang.ExceptionInfo _ nil)))

(def connect-backoff-ms
  "How long a user waits after a failed connect before its next request."
  20)

(defn- call!
  "Sends one request on the user's session and records it as `op` (feed-record/op); with `field` (a name),
  returns that top-level field of a 200's JSON body (response-field: only what the workload uses next is
  parsed), else nil."
  [{:keys [^SessionClient session host-header recorder stop] :as ctx} op req field]
  (when-not @stop
    (let [now (System/nanoTime)
          t0 (slot! ctx now)
          started (+ (System/currentTimeMillis) (quot (- t0 now) 1000000))
          bytes (request/encode req host-header)]
      (try
        (let [^Response r (.get (.send session bytes false t0))]
          (rec/record! recorder started op (.status r) (quot (.latencyNanos r) 1000) nil)
          (when (and field (= 200 (.status r)))
            (response-field (.body r) field)))
        (catch ExecutionException e
          (let [kind (if (instance? RequestFailure (.getCause e)) (.label (.kind ^RequestFailure (.getCause e))) "read")]
            (rec/record! recorder started op 0 (quot (- (System/nanoTime) t0) 1000) kind)
            ;; a failed connect backs off as rate mode's reconnects do, not a tight loop against a dead server
            (when (= kind "connect") (Thread/sleep (long connect-backoff-ms)))
            nil))))))

(defn- link [id] (str "/participant/" id))

(defn- as
  "`req` sent as participant `id`: with its bearer token when the run has a JWT secret (herald.load.impl.jwt)."
  [{:keys [tokens]} id req]
  (if tokens (assoc-in req [:headers "Authorization"] (tokens id)) req))

;; --- the optional share of edits, deletes and single-post reads (issue 11) ------------------------------------

(def ^:private max-published
  "How many links of its own posts a user remembers for later edits, deletes and reads (the newest ones)."
  10000)

(defn- remember! [{:keys [published]} sender post-link]
  (when (and published (string? post-link))
    (vswap! published (fn [v] (let [v (conj v [sender post-link])]
                                (if (> (count v) max-published) (subvec v (- (count v) max-published)) v))))))

(defn- pick-published
  "A random [sender link] of the user's published posts, or nil; with `remove?` it leaves the list (a delete)."
  [{:keys [published ^Random rnd]} remove?]
  (let [v @published n (count v)]
    (when (pos? n)
      (let [i (.nextInt rnd n) x (nth v i)]
        (when remove? (vreset! published (pop (assoc v i (peek v)))))
        x))))

(defn- mix-op
  "The kind of the next outbound operation: :edit, :delete or :read-post by the options' shares, else :post."
  [{:keys [^Random rnd opts]}]
  (let [{:keys [edit-share delete-share read-post-share]} opts
        e (double (or edit-share 0.0)) d (+ e (double (or delete-share 0.0))) r (+ d (double (or read-post-share 0.0)))]
    (if (zero? r)
      :post
      (let [x (.nextDouble rnd)]
        (cond (< x e) :edit (< x d) :delete (< x r) :read-post :else :post)))))

(defn- post!
  "Publishes one post as `b` and remembers its link (from the POST answer) when the run edits, deletes or reads."
  [{:keys [^Random rnd opts dict published] :as ctx} b]
  (let [{:keys [subject-words story-words]} opts
        post-link (call! ctx outbound-post
                         (as ctx b (merge {:method :post :path (str (link b) "/outbound")}
                                          (body-of opts {:from (link b) :occurred (str (LocalDate/now))
                                                         :subject (words/sentence rnd dict subject-words)
                                                         :story (words/sentence rnd dict story-words)})))
                         (when published "link"))]
    (remember! ctx b post-link)))

(defn- outbound-op!
  "One outbound operation as participant `b`: a post, or (by the shares, when the user has published posts) a
  PATCH, DELETE or GET of the link of one of them, recorded as outbound patch, delete or get-one."
  [{:keys [^Random rnd opts dict] :as ctx} b]
  (let [kind (mix-op ctx)
        [sender post-link] (when (not= kind :post) (pick-published ctx (= kind :delete)))]
    (if-not post-link
      (post! ctx b)
      (case kind
        :edit (call! ctx outbound-patch
                     (as ctx sender (merge {:method :patch :path post-link}
                                           (body-of opts {:subject (str (words/sentence rnd dict (:subject-words opts)) " (edited)")
                                                          :story (words/sentence rnd dict (:story-words opts))})))
                     nil)
        :delete (call! ctx outbound-delete (as ctx sender {:method :delete :path post-link}) nil)
        :read-post (call! ctx outbound-get-one (as ctx sender {:method :get :path post-link}) nil)))))

(defn- broadcast-once!
  "One broadcaster iteration: a batch of participants, friendships, then posts by the invitees."
  [{:keys [^Random rnd opts dict known] :as ctx}]
  (let [{:keys [batch-size min-friends max-friends posts-per-user]} opts
        ids (vec (keep (fn [_] (call! ctx participant-post
                                      (merge {:method :post :path "/participant"}
                                             (body-of opts {:name (words/sentence rnd dict 1)}))
                                      "id"))
                       (range batch-size)))]
    (when (seq ids)
      (swap! known into ids)
      (let [pick (fn [k] (vec (take k (distinct (repeatedly (* 4 (count ids)) #(nth ids (.nextInt rnd (count ids))))))))
            inviters (pick (min 3 (count ids)))
            invitees (pick (+ min-friends (.nextInt rnd (inc (- max-friends min-friends)))))]
        (doseq [a inviters b invitees :when (not= a b)]
          (call! ctx friends-post (as ctx a (merge {:method :post :path (str (link a) "/friends")}
                                                   (body-of opts {:from (link a) :to (link b)})))
                 nil))
        (doseq [b invitees _ (range posts-per-user)]
          (outbound-op! ctx b))))))

(defn- search-once! [{:keys [^Random rnd opts dict] :as ctx}]
  (dotimes [_ (:searches-per-user opts)]
    (call! ctx outbound-search
           {:method :get :path (str "/outbound?keywords=" (URLEncoder/encode ^String (words/pick rnd dict) StandardCharsets/UTF_8))}
           nil)))

(defn- read-once! [{:keys [^Random rnd known stop] :as ctx}]
  (let [ids @known]
    (if (empty? ids)
      (when-not @stop (Thread/sleep 10))
      (let [id (nth ids (.nextInt rnd (count ids)))]
        (doseq [[op path] feed-gets]
          (call! ctx op (as ctx id {:method :get :path (str (link id) path)}) nil))))))

(defn role
  "The role of a user drawn with `rnd`: :searcher, :reader or :broadcaster, by the options' shares."
  [^Random rnd {:keys [search-share reader-share]}]
  (let [x (.nextDouble rnd)]
    (cond (< x search-share) :searcher
          (< x (+ search-share reader-share)) :reader
          :else :broadcaster)))

(defn user-loop!
  "Runs one user until `stop` is set."
  [ctx user-role]
  (let [step (case user-role :searcher search-once! :reader read-once! :broadcaster broadcast-once!)]
    (while (not @(:stop ctx)) (step ctx))))

(defn start-users!
  "Starts one virtual thread per user, each with its session to `target`; returns {:threads :roles :sessions}."
  [opts ^Target target ^EventLoopGroup group recorder stop]
  (let [dict (words/packed-dictionary (words/dictionary 40000 (:seed opts)))
        known (atom [])
        seed-rnd (Random. (long (:seed opts)))
        cap (when-let [r (:rate-cap opts)] (long (/ 1e9 (double r))))
        next-slot (when cap (AtomicLong. (System/nanoTime)))
        host-header (request/host-header {:host (:host opts) :port (:port opts) :tls? (:https? opts)})
        timeout-ns (long (* 1e9 (double (:timeout opts))))
        tokens (jwt/token-source opts)
        streams (long (:streams opts 1))
        ;; with --streams N, users 0..N-1 share connections (one stream each), N..2N-1 the next ones, ...
        groups (when (> streams 1) (vec (repeatedly (long (Math/ceil (/ (long (:users opts)) (double streams))))
                                                    #(SessionGroup. (.next group) target))))
        users (for [i (range (:users opts))]
                (let [rnd (Random. (.nextLong seed-rnd))
                      session (if groups
                                (SessionClient. ^SessionGroup (nth groups (quot (long i) streams)) timeout-ns)
                                (SessionClient. (.next group) target (boolean (:new-connection? opts)) timeout-ns))]
                  {:role (role rnd opts)
                   :ctx {:session session :host-header host-header :recorder recorder :stop stop :rnd rnd :opts opts
                         :dict dict :known known :next-slot next-slot :cap-interval cap :user i :tokens tokens
                         :published (when (some #(pos? (double (or (opts %) 0.0))) [:edit-share :delete-share :read-post-share])
                                      (volatile! []))}}))
        users (vec users)]
    {:roles (frequencies (map :role users))
     :sessions (mapv (comp :session :ctx) users)
     :threads (mapv (fn [{:keys [role ctx]}]
                      (.start (Thread/ofVirtual) ^Runnable (fn [] (try (user-loop! ctx role)
                                                                       (catch InterruptedException _ nil)))))
                    users)}))

(defn join-users!
  "Waits for the user threads to finish their current request (at most `timeout-s`), then closes sessions."
  [{:keys [threads sessions]} timeout-s]
  (let [deadline (+ (System/nanoTime) (long (* 1e9 (+ 1.0 (double timeout-s)))))]
    (doseq [^Thread t threads]
      (let [left (- deadline (System/nanoTime))]
        (when (pos? left) (.join t (java.time.Duration/ofNanos left)))
        (.interrupt t)))
    (doseq [^SessionClient s sessions] (.close s))))
