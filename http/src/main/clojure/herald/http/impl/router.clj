(ns herald.http.impl.router
  "Route data -> flat route list -> Java segment trie; the dispatching Ring handler."
  (:require [clojure.string :as str])
  (:import (herald.http.route Endpoint MalformedRouteException RequestMaps Route RouteConflictException
                              RouteMatch Router)))

(set! *warn-on-reflection* true)

(def route-methods
  "Request methods a route may name, besides `:any`."
  #{:get :head :post :put :delete :patch :options :trace :connect
    :propfind :proppatch :mkcol :copy :move :lock :unlock :report :search :purge})

(defn- bad-route
  ([msg route] (throw (ex-info msg {:type :herald.http/malformed-route :route route})))
  ([msg route k] (throw (ex-info msg {:type :herald.http/malformed-route :route route :key k}))))

(def meta-keys
  "Documentation keys a route's data map, or a method's `{:handler h ..}` map, may carry (read by
  herald.http.openapi, never by matching)."
  #{:summary :description :operation-id :tags :parameters :request :responses :security :deprecated})

(defn- own-key?
  "Qualified keywords (`:my.app/perf`) are the application's own route data: kept, ignored by herald.http."
  [k]
  (and (keyword? k) (some? (namespace k))))

(defn- check-method-map! [path k v]
  (when-not (and (ifn? (:handler v)) (sequential? (:middleware v [])))
    (bad-route (str "route " path " " k " must be a handler function or {:handler f :middleware [...]}, got "
                    (pr-str v)) path k))
  (doseq [mk (keys v) :when (not (or (#{:handler :middleware} mk) (meta-keys mk) (own-key? mk)))]
    (bad-route (str "route " path " " k " has an unknown key " mk "; expected :handler, :middleware, "
                    (sort meta-keys) " or a qualified keyword") path mk)))

(defn- check-data! [path data]
  (doseq [[k v] data]
    (cond
      (or (#{:name :middleware} k) (meta-keys k) (own-key? k)) nil
      (or (route-methods k) (= :any k))
      (if (map? v)
        (check-method-map! path k v)
        (when-not (ifn? v)
          (bad-route (str "route " path " " k " must be a handler function or {:handler f :middleware [...]}, got "
                          (pr-str v)) path k)))
      :else (bad-route (str "route " path " has an unknown key " k "; expected a method keyword "
                            (sort (conj route-methods :any)) ", :name, :middleware, " (sort meta-keys)
                            " or a qualified keyword") path k)))
  (when-let [mw (:middleware data)]
    (when-not (sequential? mw)
      (bad-route (str "route " path " :middleware must be a vector, got " (pr-str mw)) path :middleware))))

(defn- join-path [prefix path]
  (cond (str/blank? prefix) path
        (= "/" path) (if (str/ends-with? prefix "/") prefix (str prefix "/"))
        (str/ends-with? prefix "/") (str prefix (subs path 1))
        :else (str prefix path)))

(defn flatten-routes
  "Turns nested route data into `[{:path p :data {...} :middleware [...] :parents [{...}]}]` in declaration
  order (`:parents`: the data maps of the enclosing routes, outermost first). A route is
  `[path data? & children]`; children are routes, or seqs of routes (nil ignored)."
  ([routes] (flatten-routes "" [] [] routes))
  ([prefix mw parents routes]
   (cond
     (nil? routes) []
     (and (vector? routes) (string? (first routes)))
     (let [[path & more] routes
           data (when (map? (first more)) (first more))
           children (if data (rest more) more)
           full (join-path prefix path)
           mw' (into mw (:middleware data))]
       (when-not (str/starts-with? path "/") (bad-route (str "route path " (pr-str path) " must start with /") path))
       (when data (check-data! full data))
       (when (and (empty? children) (not-any? (conj route-methods :any) (keys data)))
         (bad-route (str "route " full " has no handler and no child routes") full))
       (cond-> (if (some (conj route-methods :any) (keys data))
                 [{:path full :data data :middleware mw' :parents parents}]
                 [])
         (seq children) (into (mapcat #(flatten-routes full mw' (cond-> parents data (conj data)) %) children))))
     (sequential? routes) (into [] (mapcat #(flatten-routes prefix mw parents %) routes))
     :else (bad-route (str "a route must be [\"/path\" {...}], got " (pr-str routes)) routes))))

(defn- apply-middleware [handler mws]
  (reduce (fn [h m]
            (cond (and (vector? m) (ifn? (first m))) (apply (first m) h (rest m))
                  (ifn? m) (m h)
                  :else (throw (ex-info (str "middleware must be a function or [f & args], got " (pr-str m))
                                        {:type :herald.http/invalid-option :key :middleware :value m}))))
          handler (reverse mws)))

(defn- endpoint [{:keys [data middleware]} global-mw]
  (let [mws (into (vec global-mw) middleware)
        handlers (for [[k v] data :when (or (route-methods k) (= :any k))]
                   [k (if (map? v)
                        (apply-middleware (:handler v) (into mws (:middleware v)))
                        (apply-middleware v mws))])]
    (Endpoint. ^java.util.Map (apply array-map (mapcat identity handlers)))))

(defn compile-flat
  "Builds the Java Router from flattened routes (`flatten-routes`); conflicts and malformed templates become
  ex-info."
  ^Router [flat global-mw]
  (let [b (Router/builder)]
    (doseq [{:keys [path data] :as r} flat]
      (try (.add b ^String path (:name data) (endpoint r global-mw))
           (catch MalformedRouteException e
             (throw (ex-info (.getMessage e) {:type :herald.http/malformed-route :route path
                                              :reason (.reason e)} e)))
           (catch RouteConflictException e
             (let [a (.first e) b2 (.second e)]
               (throw (ex-info (.getMessage e)
                               {:type :herald.http/route-conflict
                                :routes [{:path (.template a) :name (.name a)}
                                         {:path (.template b2) :name (.name b2)}]} e))))))
    (.build b)))

(defn compile-routes
  "Builds the Java Router from route data; conflicts and malformed templates become ex-info."
  ^Router [routes global-mw]
  (compile-flat (flatten-routes routes) global-mw))

(def ^:private json-type "application/json; charset=utf-8")

(def not-found-response
  {:status 404 :headers {"Content-Type" json-type} :body "{\"error\":\"not found\"}"})

(def default-not-found
  "The router's default `:not-found` handler: 404 with a JSON body."
  (fn ([_] not-found-response)
      ([_ respond _] (respond not-found-response))))

(defn- method-not-allowed-response [req]
  {:status 405
   :headers {"Content-Type" json-type "Allow" (:herald.http/allow req)}
   :body "{\"error\":\"method not allowed\"}"})

(def default-method-not-allowed
  "The router's default `:method-not-allowed` handler: 405, Allow (from `:herald.http/allow`), JSON body."
  (fn ([req] (method-not-allowed-response req))
      ([req respond _] (respond (method-not-allowed-response req)))))

(defn- has-header? [headers ^String name]
  (some #(.equalsIgnoreCase name (str %)) (keys headers)))

(defn ensure-allow
  "Adds `Allow: allow` to `resp` unless it has one."
  [resp allow]
  (if (or (nil? allow) (has-header? (:headers resp) "allow")) resp (assoc-in resp [:headers "Allow"] allow)))

(defmacro ^:private with-match
  "`req` with `:path-params`, `:herald.http/route` and, for named routes, `:herald.http/route-name`."
  [req m]
  `(RequestMaps/withMatch ~req ~m))

(defn options-response [^Endpoint ep]
  {:status 204 :headers {"Allow" (.allow ep)}})

(deftype RingRouter [^Router trie names not-found method-not-allowed flat]
  ;; `flat`: the flattened route data, kept for documentation (herald.http.openapi); matching never reads it
  clojure.lang.IFn
  (invoke [_ req]
    (if-let [m (.match trie (:uri req))]
      (let [ep ^Endpoint (.payload (.route m))
            method (:request-method req)]
        (if-let [h (.handler ep method)]
          (.invoke ^clojure.lang.IFn h (with-match req m))
          (if (identical? :options method)
            (options-response ep)
            (ensure-allow (method-not-allowed (assoc (with-match req m) :herald.http/allow (.allow ep)))
                          (.allow ep)))))
      (not-found req)))
  (invoke [_ req respond raise]
    (if-let [m (.match trie (:uri req))]
      (let [ep ^Endpoint (.payload (.route m))
            method (:request-method req)]
        (if-let [h (.handler ep method)]
          (.invoke ^clojure.lang.IFn h (with-match req m) respond raise)
          (if (identical? :options method)
            (respond (options-response ep))
            (method-not-allowed (assoc (with-match req m) :herald.http/allow (.allow ep))
                                (fn [resp] (respond (ensure-allow resp (.allow ep))))
                                raise))))
      (not-found req respond raise)))
  (applyTo [this args] (clojure.lang.AFn/applyToHelper this args)))

(defn trie-of
  "The Java Router of a RingRouter."
  ^Router [^RingRouter r]
  (.-trie r))

(defn names-of
  "The name -> Route index of a RingRouter."
  [^RingRouter r]
  (.-names r))

(defn flat-of
  "The flattened route data (`flatten-routes`) a RingRouter was built from."
  [^RingRouter r]
  (.-flat r))
