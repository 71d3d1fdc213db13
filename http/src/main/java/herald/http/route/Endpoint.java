package herald.http.route;

import clojure.lang.Keyword;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.StringJoiner;

/**
 * The method table of one route: request-method keyword to handler. HEAD falls back to the GET handler
 * (the server sends no body for HEAD); {@code :any} answers every method without a handler of its own.
 * {@link #allow()} is the value of the {@code Allow} header for 405 and OPTIONS responses.
 */
public final class Endpoint {
  static final Keyword GET = Keyword.intern("get");
  static final Keyword HEAD = Keyword.intern("head");
  static final Keyword POST = Keyword.intern("post");
  static final Keyword PUT = Keyword.intern("put");
  static final Keyword DELETE = Keyword.intern("delete");
  static final Keyword PATCH = Keyword.intern("patch");
  static final Keyword OPTIONS = Keyword.intern("options");
  static final Keyword ANY = Keyword.intern("any");

  private final Object get, head, post, put, delete, patch, options, any;
  private final Map<Object, Object> others;
  private final String allow;
  private final java.util.Set<Object> methods;

  /** {@code handlers}: method keyword to handler, in the order they should appear in Allow. */
  public Endpoint(Map<?, ?> handlers) {
    Map<Object, Object> m = new LinkedHashMap<>(handlers);
    methods = java.util.Collections.unmodifiableSet(new java.util.LinkedHashSet<>(m.keySet()));
    get = m.remove(GET);
    Object h = m.remove(HEAD);
    head = h != null ? h : get;
    post = m.remove(POST);
    put = m.remove(PUT);
    delete = m.remove(DELETE);
    patch = m.remove(PATCH);
    options = m.remove(OPTIONS);
    any = m.remove(ANY);
    others = m;
    allow = any != null ? null : allowHeader();
  }

  private String allowHeader() {
    StringJoiner j = new StringJoiner(", ");
    if (get != null) j.add("GET");
    if (head != null) j.add("HEAD");
    if (post != null) j.add("POST");
    if (put != null) j.add("PUT");
    if (delete != null) j.add("DELETE");
    if (patch != null) j.add("PATCH");
    for (Object k : others.keySet()) j.add(((Keyword) k).getName().toUpperCase(java.util.Locale.ROOT));
    j.add("OPTIONS");
    return j.toString();
  }

  /** The handler for {@code method} (a keyword such as {@code :get}), or null when there is none. */
  public Object handler(Object method) {
    Object h;
    if (method == GET) h = get;
    else if (method == POST) h = post;
    else if (method == HEAD) h = head;
    else if (method == PUT) h = put;
    else if (method == DELETE) h = delete;
    else if (method == PATCH) h = patch;
    else if (method == OPTIONS) h = options;
    else h = others.isEmpty() ? null : others.get(method);
    return h != null ? h : any;
  }

  /** The Allow header value, e.g. {@code "GET, HEAD, POST, OPTIONS"}; null when {@code :any} is set. */
  public String allow() {
    return allow;
  }

  /** The method keywords declared for this route, in declaration order. */
  public java.util.Set<Object> methods() {
    return methods;
  }

  /** True when the route has its own OPTIONS handler (or {@code :any}). */
  public boolean handlesOptions() {
    return options != null || any != null;
  }
}
