(ns herald.http.openapi
  "OpenAPI 3.1 documents built from a router's route data: each route's documentation keys become its operations."
  (:require [clojure.string :as str]
            [herald.http.impl.support :as support]
            [herald.http.impl.router :as impl])
  (:import (herald.http.impl.router RingRouter)
           (herald.http.route MalformedRouteException RouteTemplate)
           (io.netty.handler.codec.http HttpResponseStatus)))

(set! *warn-on-reflection* true)

(def ^:private operation-methods
  "The methods an OpenAPI path item can hold, in the order the document lists them."
  [:get :put :post :delete :options :head :patch :trace])

(def ^:private any-methods
  "The methods an `:any` handler is documented for (when the route has no handler of its own for them)."
  [:get :put :post :delete :patch])

(def ^:private inherited-keys
  "The documentation keys a route passes on to its children."
  #{:tags :parameters :responses :security :deprecated})

(defn- param-segment? [^String seg]
  (and (pos? (.length seg)) (#{\: \*} (.charAt seg 0))))

(defn path
  "The OpenAPI path of router template `template`: `/participant/:id` -> `/participant/{id}`, `/files/*path` ->
  `/files/{path}`; `{` and `}` in static text are percent-encoded."
  ^String [^String template]
  (str/join "/" (for [^String seg (str/split template #"/" -1)]
                  (if (param-segment? seg)
                    (str "{" (subs seg 1) "}")
                    (-> seg (str/replace "{" "%7B") (str/replace "}" "%7D"))))))

(defn- template-params
  "The parameter names of `template`, in order, as {name :param|:wildcard}."
  [^String template]
  (into (array-map) (for [^String seg (str/split template #"/" -1) :when (param-segment? seg)]
                      [(subs seg 1) (if (= \* (.charAt seg 0)) :wildcard :param)])))

;; ---------------------------------------------------------------------------------------------------
;; checking and normalising one level of documentation data

(defn- where [{:keys [route method]}]
  (str "route " route (when method (str " " method))))

(defn- invalid [ctx k v expected]
  (throw (ex-info (str (where ctx) " " k " must be " expected ", got " (pr-str v))
                  (assoc ctx :type :herald.http/invalid-openapi :key k :value v))))

(defn- check-keys! [ctx k m allowed]
  (when-not (map? m) (invalid ctx k m "a map"))
  (doseq [x (keys m) :when (not (allowed x))]
    (throw (ex-info (str (where ctx) " " k " has an unknown key " (pr-str x) "; expected one of " (sort allowed))
                    (assoc ctx :type :herald.http/invalid-openapi :key x :in k)))))

(defn- schema? [s] (or (map? s) (boolean? s)))

(defn- named? [x] (or (string? x) (keyword? x)))

(defn- content [ctx k c]
  (when-not (and (map? c) (seq c) (every? string? (keys c)) (every? schema? (vals c)))
    (invalid ctx k c "a non-empty map of content type (a String) -> JSON Schema"))
  (into (sorted-map) (for [[ct s] c] [ct {:schema s}])))

(def ^:private param-keys #{:in :name :schema :required :description :deprecated :example :style :explode})

(defn- parameter [ctx template p]
  (check-keys! ctx :parameters p param-keys)
  (let [in (some-> (:in p) name keyword)
        pname (when (named? (:name p)) (name (:name p)))]
    (when-not (#{:path :query :header :cookie} in) (invalid ctx :parameters p "a map with :in :path, :query, :header or :cookie"))
    (when-not pname (invalid ctx :parameters p "a map with a :name (String or keyword)"))
    (when-not (schema? (:schema p)) (invalid ctx :parameters p "a map with a :schema (JSON Schema)"))
    (when (= :path in)
      (when-not (contains? (template-params template) pname)
        (invalid ctx :parameters p (str "a path parameter of the template (" (str/join ", " (keys (template-params template))) ")")))
      (when (false? (:required p)) (invalid ctx :parameters p "required (a path parameter always is)")))
    (cond-> (into (array-map :name pname :in (name in)) (dissoc p :in :name))
      (= :path in) (assoc :required true))))

(defn- status-key [ctx s]
  (cond (and (int? s) (<= 100 (long s) 599)) (str s)
        (and (string? s) (re-matches #"default|[1-5]XX|[1-5][0-9][0-9]" s)) s
        :else (invalid ctx :responses s "keyed by status: an int 100-599, \"default\" or \"4XX\"-style")))

(defn- reason [^String status]
  (if (re-matches #"[0-9]+" status)
    (.reasonPhrase (HttpResponseStatus/valueOf (Integer/parseInt status)))
    "Response"))

(defn- response [ctx status r]
  (check-keys! ctx :responses r #{:description :content :headers})
  (when-let [hs (:headers r)]
    (when-not (and (map? hs) (every? named? (keys hs))) (invalid ctx :responses hs "headers as a map of name -> header"))
    (doseq [h (vals hs)] (check-keys! ctx :responses h #{:schema :description :required :deprecated})))
  (cond-> {:description (or (:description r) (reason status))}
    (:content r) (assoc :content (content ctx :responses (:content r)))
    (:headers r) (assoc :headers (into (sorted-map) (for [[n h] (:headers r)] [(name n) h])))))

(defn- level
  "One level's documentation keys of `m`, checked and in output form."
  [ctx template m]
  (let [{:keys [summary description operation-id tags parameters request responses security deprecated]} m
        check (fn [k v ok? expected] (when (and (contains? m k) (not ok?)) (invalid ctx k v expected)))]
    (check :summary summary (string? summary) "a String")
    (check :description description (string? description) "a String")
    (check :operation-id operation-id (string? operation-id) "a String")
    (check :tags tags (and (sequential? tags) (every? string? tags)) "a vector of Strings")
    (check :parameters parameters (sequential? parameters) "a vector of parameter maps")
    (check :responses responses (map? responses) "a map of status -> response")
    (check :security security (and (sequential? security) (every? map? security)) "a vector of requirement maps")
    (check :deprecated deprecated (boolean? deprecated) "a boolean")
    (when (contains? m :request) (check-keys! ctx :request request #{:content :required :description}))
    (cond-> (select-keys m [:summary :description :operation-id :tags :security :deprecated])
      parameters (assoc :parameters (mapv #(parameter ctx template %) parameters))
      request (assoc :request (cond-> {:content (content ctx :request (:content request))}
                                (contains? request :required) (assoc :required (:required request))
                                (:description request) (assoc :description (:description request))))
      responses (assoc :responses (into {} (for [[s r] responses :let [s (status-key ctx s)]]
                                             [s (response ctx s r)]))))))

(defn- merge-params
  "The parameters of `a` then those of `b`; one of `b` with the :in and :name of one of `a` replaces it in place."
  [a b]
  (let [k (juxt :in :name)
        replaced (into {} (map (juxt k identity) b))
        in-a (set (map k a))]
    (into (mapv #(get replaced (k %) %) a) (remove #(in-a (k %)) b))))

(defn- merge-levels [a b]
  (merge a b
         (when (and (:tags a) (:tags b)) {:tags (vec (distinct (concat (:tags a) (:tags b))))})
         (when (and (:parameters a) (:parameters b)) {:parameters (merge-params (:parameters a) (:parameters b))})
         (when (and (:responses a) (:responses b)) {:responses (merge (:responses a) (:responses b))})))

;; ---------------------------------------------------------------------------------------------------
;; operations, path items, the document

(defn- with-path-params
  "`params` with the template's path parameters that it lacks, first: a `:name` is a non-empty segment, a
  `*name` the rest of the path."
  [template params]
  (let [given (set (keep #(when (= "path" (:in %)) (:name %)) params))]
    (into (vec (for [[n kind] (template-params template) :when (not (given n))]
                 (cond-> {:name n :in "path" :required true :schema {:type "string"}}
                   (= :param kind) (assoc-in [:schema :minLength] 1)
                   (= :wildcard kind) (assoc :description "the rest of the path (may contain /)"))))
          params)))

(defn- operation [{:keys [summary description operation-id tags parameters request responses security deprecated]}
                  template]
  (let [params (with-path-params template parameters)]
    (cond-> (array-map)
      summary (assoc :summary summary)
      description (assoc :description description)
      operation-id (assoc :operationId operation-id)
      (seq tags) (assoc :tags tags)
      (seq params) (assoc :parameters params)
      request (assoc :requestBody (into (array-map) (sort-by key request)))
      responses (assoc :responses (into (sorted-map) responses))
      (some? security) (assoc :security (vec security))
      deprecated (assoc :deprecated true))))

(defn- doc-of
  "The merged documentation of method `m` (its value `v`) of flattened route `r`."
  [{:keys [path data parents]} m v]
  (let [ctx {:route path :method m}
        levels (concat (map #(level ctx path (select-keys % inherited-keys)) parents)
                       [(level ctx path (select-keys data impl/meta-keys))
                        (when (map? v) (level ctx path (select-keys v impl/meta-keys)))])]
    (reduce merge-levels {} levels)))

(defn- path-item
  "The entry openapi-path -> {method operation} of flattened route `r`: OpenAPI's methods only, `:any` as each of
  `any-methods` without a handler of its own (its :operation-id suffixed -method)."
  [{template :path data :data :as r}]
  (try (RouteTemplate/parse template)
       (catch MalformedRouteException e
         (throw (ex-info (.getMessage e) {:type :herald.http/malformed-route :route template :reason (.reason e)} e))))
  (let [any (:any data)
        ops (for [m operation-methods
                  :let [v (get data m)
                        from-any? (and (nil? v) any (some #{m} any-methods))]
                  :when (or v from-any?)]
              [m (operation (cond-> (doc-of r (if v m :any) (or v any))
                              from-any? (update :operation-id #(some-> % (str "-" (name m)))))
                            template)])]
    (clojure.lang.MapEntry. (path template) (into (array-map) ops))))

(defn- check-unique! [items]
  (doseq [[_ group] (group-by #(str/replace (key %) #"\{[^}]*\}" "{}") items)
          :when (< 1 (count group))]
    (throw (ex-info (str "routes " (str/join " and " (map key group)) " are one OpenAPI path (they differ only in"
                         " parameter names, or a wildcard stands where a parameter does)")
                    {:type :herald.http/invalid-openapi :key :paths :routes (mapv key group)})))
  (doseq [[id ops] (group-by :id (for [[p item] items [m op] item :when (:operationId op)]
                                    {:id (:operationId op) :op [m p]}))
          :when (< 1 (count ops))]
    (throw (ex-info (str "operationId " (pr-str id) " is used by " (str/join " and " (map #(str/join " " (:op %)) ops)))
                    {:type :herald.http/invalid-openapi :key :operation-id :operation-id id :operations (mapv :op ops)}))))

(def ^:private document-options
  {:info       [#(and (map? %) (string? (:title %)) (string? (:version %))) "an Info map with a :title and a :version (Strings)"]
   :servers    [#(and (sequential? %) (every? map? %)) "a vector of Server maps ({:url ..})"]
   :components [map? "a Components map (:schemas, :securitySchemes, ..)"]
   :security   [#(and (sequential? %) (every? map? %)) "a vector of security requirement maps"]
   :tags       [#(and (sequential? %) (every? map? %)) "a vector of Tag maps ({:name ..})"]})

(defn openapi
  "The OpenAPI 3.1.0 document (a Clojure map ready for `herald.json/write-str`) of `router-or-routes`: a router
  built by `herald.http.router/router`, or route data. Every route with a handler for an OpenAPI method is one path,
  its template in OpenAPI syntax (`/participant/:id` -> `/participant/{id}`, `/files/*path` -> `/files/{path}`), in
  declaration order.
  Documentation is plain data in the route's map (for all its methods) or in a method's `{:handler h ..}` map
  (which wins); matching never reads it:

  | key | type | becomes |
  |-----|------|---------|
  | `:summary` `:description` | String | the operation's |
  | `:operation-id` | String | `operationId`; unique in the document |
  | `:tags` | vector of Strings | `tags` |
  | `:parameters` | vector of `{:in :path/:query/:header/:cookie :name n :schema json-schema :required? :description ..}` | `parameters`; path parameters of the template that are not given are added (`{:type \"string\"}`) |
  | `:request` | `{:content {content-type json-schema} :required bool :description s}` | `requestBody` |
  | `:responses` | `{status {:description s :content {content-type json-schema} :headers {name {:schema ..}}}}` | `responses`; status an int, `\"4XX\"` or `\"default\"`; description defaults to the reason phrase |
  | `:security` | vector of requirement maps | `security` |
  | `:deprecated` | boolean | `deprecated` |

  A parent route's `:tags` `:parameters` `:responses` `:security` `:deprecated` apply to its children
  (parameters by :in and :name, responses by status, tags added; the child's win). HEAD answered by the GET
  handler and the router's automatic OPTIONS are not listed (a route's own `:head`/`:options` handler is); an
  `:any` handler is listed as GET, PUT, POST, DELETE and PATCH where the route has no handler of its own (its
  `:operation-id` suffixed `-get` ..); CONNECT and WebDAV methods have no place in OpenAPI and are left out.

  | option | type | meaning |
  |--------|------|---------|
  | `:info` | map, required | the Info object: `{:title s :version s :description ..}` |
  | `:servers` | vector | Server objects, `[{:url \"https://api.example\"}]` |
  | `:components` | map | the Components object as is (`:schemas`, `:securitySchemes`, ..), for `$ref`s |
  | `:security` | vector | the document's default security requirement |
  | `:tags` | vector | Tag objects |

  Errors (ex-info): a bad documentation value or an unknown key inside one (a parameter's `:schme`) ->
  `{:type :herald.http/invalid-openapi :route path :method m :key k}`; two operations with one operationId, or two
  routes that are one OpenAPI path (`/a/:x` and `/a/*y`) -> `:herald.http/invalid-openapi`; an unknown route data
  key -> `:herald.http/malformed-route` with `:key` (as `herald.http.router/router` throws); a bad option ->
  `:herald.http/invalid-option`. Reference: docs/http-routing.md#openapi."
  [router-or-routes opts]
  (when-not (contains? opts :info)
    (throw (ex-info "openapi needs :info {:title .. :version ..}" {:type :herald.http/invalid-option :key :info})))
  (support/check-options! "openapi" document-options opts)
  (let [r router-or-routes
        flat (if (instance? RingRouter r) (impl/flat-of r) (impl/flatten-routes r))
        items (filterv #(seq (val %)) (map path-item flat))]
    (check-unique! items)
    (cond-> (array-map :openapi "3.1.0" :info (:info opts))
      (:servers opts) (assoc :servers (:servers opts))
      true (assoc :paths (apply array-map (mapcat identity items)))
      (:components opts) (assoc :components (:components opts))
      (:security opts) (assoc :security (:security opts))
      (:tags opts) (assoc :tags (:tags opts)))))
