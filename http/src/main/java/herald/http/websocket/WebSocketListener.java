package herald.http.websocket;

import java.nio.ByteBuffer;

/** The callbacks of one WebSocket, called in order and never concurrently for the same socket. */
public interface WebSocketListener {
    void onOpen(HeraldWebSocket socket);

    /** {@code message} is a String (text frame) or a ByteBuffer (binary frame). */
    void onMessage(HeraldWebSocket socket, Object message);

    /** True when the listener answers pings itself; otherwise the server sends the pong. */
    boolean handlesPing();

    void onPing(HeraldWebSocket socket, ByteBuffer data);

    void onPong(HeraldWebSocket socket, ByteBuffer data);

    void onError(HeraldWebSocket socket, Throwable error);

    void onClose(HeraldWebSocket socket, int code, String reason);
}
