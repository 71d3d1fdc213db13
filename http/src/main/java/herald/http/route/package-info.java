/**
 * The router's matcher: route templates ({@link herald.http.route.RouteTemplate}) compiled into a segment
 * trie ({@link herald.http.route.Router}) that matches a raw request path without regular expressions,
 * and per-route method tables ({@link herald.http.route.Endpoint}).
 *
 * <p>Priority at every segment: a static segment before a {@code :param} before a {@code *wildcard},
 * with backtracking, so {@code /a/new} wins over {@code /a/:id} whatever the order of declaration. Two
 * routes that match exactly the same paths are a {@link herald.http.route.RouteConflictException} at
 * construction.
 */
package herald.http.route;
