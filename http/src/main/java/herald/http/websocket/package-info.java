/**
 * WebSockets for the Ring 1.11 listener API: {@link herald.http.websocket.WebSocketUpgrade} turns a response
 * carrying {@code :ring.websocket/listener} into an upgraded connection, {@link herald.http.websocket.HeraldWebSocket}
 * is the socket handed to the listener, and {@link herald.http.websocket.WebSocketListener} is what the
 * Clojure layer adapts a listener map or a Ring Listener to. Callbacks run in order, one at a time per socket,
 * on virtual threads.
 */
package herald.http.websocket;
