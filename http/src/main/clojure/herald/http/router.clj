(ns herald.http.router
  "Data-driven routing: route vectors compiled into a Java segment trie, served as one Ring handler."
  (:require [herald.http.impl.support :as support]
            [herald.http.impl.router :as impl]
            [herald.http.impl.router-paths :as paths])
  (:import (herald.http.impl.router RingRouter)
           (herald.http.route Endpoint RouteMatch Router)))

(set! *warn-on-reflection* true)

(def ^:private router-options
  {:not-found          [ifn? "a Ring handler (1- and/or 3-arity)"]
   :method-not-allowed [ifn? "a Ring handler (1- and/or 3-arity)"]
   :middleware         [sequential? "a vector of middleware (fn or [f & args])"]})

(defn router
  "Compiles `routes` into a Ring handler that works in both arities, `(handler request)` and
  `(handler request respond raise)`, calling each route's handler in the same arity.

  Routes are data. A route is `[path data? & children]`:

      [[\"/participant\" {:post create}]
       [\"/participant/:id\" {:get show :delete del :name ::participant}]
       [\"/files/*path\" {:get file}]
       [\"/api\" {:middleware [wrap-auth]}      ; data shared by the children
        [\"/a\" {:get a}]
        [\"/b\" {:get b :post b2}]]]

  Paths: static segments, `:name` (one whole non-empty segment) and a final `*name` (the rest of the
  path, possibly empty). Children's paths are appended to their parent's. A trailing `/` is
  significant. Nested seqs of routes are flattened and nil routes ignored, so routes can be computed.

  | route data key    | type                  | meaning                                                  |
  |-------------------|-----------------------|----------------------------------------------------------|
  | `:get` `:post` .. | Ring handler, or `{:handler h :middleware [..]}` | the handler for that method (also `:put` `:delete` `:patch` `:options` `:head` `:trace` and WebDAV methods); the map form adds middleware for this method only, innermost |
  | `:any`            | Ring handler          | every method without a handler of its own                |
  | `:name`           | any                   | put in the request as `:herald.http/route-name`          |
  | `:middleware`     | vector                | wraps this route's (and its children's) handlers; each entry is `(fn [handler] handler)` or `[f & args]` called as `(apply f handler args)`; the first entry is the outermost |
  | `:summary` `:description` `:operation-id` `:tags` `:parameters` `:request` `:responses` `:security` `:deprecated` | data | documentation, here or in a method's `{:handler h ..}` map: read by `herald.http.openapi/openapi`, never by matching |
  | a qualified keyword | any                   | the application's own data (`:my.app/perf`), kept and ignored |

  Matching takes the raw `:uri`. At every segment a static segment wins over a `:param`, which wins over a
  `*wildcard`, with backtracking (`/a/new` beats `/a/:id` whatever the order). The handler gets the request
  with:

  | key                       | value                                                         |
  |---------------------------|---------------------------------------------------------------|
  | `:path-params`            | map of keyword -> String, percent-decoded as UTF-8 (`+` kept) |
  | `:herald.http/route`      | the matched template, e.g. `\"/participant/:id\"`              |
  | `:herald.http/route-name` | the route's `:name`, when it has one                          |

  Responses made by the router: no matching path -> `:not-found`; a path whose route lacks the method ->
  `:method-not-allowed` with `Allow` (the request carries `:herald.http/allow`; `Allow` is added to the
  response if the handler left it out); HEAD without its own handler -> the GET handler (the server drops
  the body); OPTIONS without its own handler -> 204 with `Allow`.

  | option                | type         | default                         | meaning                                   |
  |-----------------------|--------------|---------------------------------|-------------------------------------------|
  | `:not-found`          | Ring handler | 404, `{\"error\":\"not found\"}`  | called when no route matches the path     |
  | `:method-not-allowed` | Ring handler | 405 + Allow, JSON error body    | called when the path matches, the method does not |
  | `:middleware`         | vector       | `[]`                            | wraps every route handler, outside the route's own middleware (it sees `:path-params`); wrap the router itself to cover 404/405 too |

  Errors at construction (ex-info): two routes matching exactly the same paths (a duplicate template or
  `/a/:x` beside `/a/:y`) -> `{:type :herald.http/route-conflict :routes [{:path :name} {:path :name}]}`;
  a malformed template or route -> `{:type :herald.http/malformed-route :route path}` (with `:key k` for an
  unknown or bad data key); one `:name` on two
  routes -> `{:type :herald.http/duplicate-route-name :name n :routes [p1 p2]}`; a bad option ->
  `{:type :herald.http/invalid-option :key k}`.

  See also `match` and `routes` (introspection) and `path-for` (paths from route names). Reference:
  docs/http-routing.md."
  ([routes] (router routes {}))
  ([routes opts]
   (support/check-options! "router" router-options opts)
   (let [flat (impl/flatten-routes routes)
         trie (impl/compile-flat flat (:middleware opts))]
     (RingRouter. trie
                  (paths/name-index trie)
                  (:not-found opts impl/default-not-found)
                  (:method-not-allowed opts impl/default-method-not-allowed)
                  flat))))

(defn match
  "Matches the raw `path` against `r` (a router built by `router`, or route data) without calling any
  handler. Returns `{:template t :name n :path-params {...} :methods #{...}}` or nil."
  [r ^String path]
  (let [^Router trie (if (instance? RingRouter r) (impl/trie-of r) (impl/compile-routes r nil))]
    (when-let [^RouteMatch m (.match trie path)]
      (let [route (.route m)]
        {:template (.template route)
         :name (.name route)
         :path-params (.params m)
         :methods (set (.methods ^Endpoint (.payload route)))}))))

(defn routes
  "The flat route list of route data or of a router: `[{:path p :name n :methods #{...}}]`, in
  declaration order (for documentation and tools)."
  [r]
  (let [^Router trie (if (instance? RingRouter r) (impl/trie-of r) (impl/compile-routes r nil))]
    (mapv (fn [^herald.http.route.Route route]
            {:path (.template route) :name (.name route)
             :methods (set (.methods ^Endpoint (.payload route)))})
          (.routes trie))))

(defn path-for
  "The path of the route named `route-name` in router `r` (built by `router`), with `params` filled in:
  `(path-for app ::participant {:id 7})` -> `\"/participant/7\"`. Values are `str`-ed and percent-encoded
  as UTF-8 (a wildcard value keeps its `/`s), so `match` on the result gives the same params back (as
  Strings). Throws ex-info `{:type :herald.http/unknown-route-name}` or
  `{:type :herald.http/missing-path-param :param k}`."
  (^String [r route-name] (path-for r route-name {}))
  (^String [r route-name params]
   (if-let [route (get (impl/names-of r) route-name)]
     (paths/path route params)
     (throw (ex-info (str "no route named " (pr-str route-name))
                     {:type :herald.http/unknown-route-name :name route-name})))))
