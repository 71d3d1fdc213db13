package herald.http.websocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import herald.http.server.LeakWatcher;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** WebSocket frames to listener events on an EmbeddedChannel. */
class WebSocketFrameHandlerTest {
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final CountDownLatch closed = new CountDownLatch(1);

    private WebSocketListener listener(boolean handlesPing) {
        return new WebSocketListener() {
            public void onOpen(HeraldWebSocket s) { events.add("open"); }
            public void onMessage(HeraldWebSocket s, Object m) { events.add("message:" + m); }
            public boolean handlesPing() { return handlesPing; }
            public void onPing(HeraldWebSocket s, ByteBuffer d) { events.add("ping"); }
            public void onPong(HeraldWebSocket s, ByteBuffer d) { events.add("pong"); }
            public void onError(HeraldWebSocket s, Throwable t) { events.add("error"); }
            public void onClose(HeraldWebSocket s, int code, String reason) {
                events.add("close:" + code);
                closed.countDown();
            }
        };
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        assertEquals(List.of(), LeakWatcher.leaks(), "Netty reported leaks");
    }

    @Test
    void eventsArriveInOrderAndPingsGetAutomaticPongs() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel();
        HeraldWebSocket socket = new HeraldWebSocket(ch, listener(false), Executors.newVirtualThreadPerTaskExecutor(), 1000);
        ch.pipeline().addLast(new WebSocketFrameHandler(socket));
        socket.opened();
        ch.writeInbound(new TextWebSocketFrame("one"));
        ch.writeInbound(new PingWebSocketFrame(Unpooled.copiedBuffer("p", StandardCharsets.UTF_8)));
        PongWebSocketFrame pong = assertInstanceOf(PongWebSocketFrame.class, ch.readOutbound());
        assertEquals("p", pong.content().toString(StandardCharsets.UTF_8));
        pong.release();
        ch.writeInbound(new TextWebSocketFrame("two"));
        ch.writeInbound(new PongWebSocketFrame(Unpooled.EMPTY_BUFFER));
        ch.writeInbound(new CloseWebSocketFrame(1000, "bye"));
        CloseWebSocketFrame answer = assertInstanceOf(CloseWebSocketFrame.class, ch.readOutbound());
        assertEquals(1000, answer.statusCode());
        answer.release();
        ch.runPendingTasks();
        assertTrue(closed.await(5, TimeUnit.SECONDS));
        assertEquals(List.of("open", "message:one", "message:two", "pong", "close:1000"), events);
        ch.finishAndReleaseAll();
    }

    @Test
    void aListenerThatHandlesPingsGetsThemInstead() throws Exception {
        EmbeddedChannel ch = new EmbeddedChannel();
        HeraldWebSocket socket = new HeraldWebSocket(ch, listener(true), Executors.newVirtualThreadPerTaskExecutor(), 1000);
        ch.pipeline().addLast(new WebSocketFrameHandler(socket));
        socket.opened();
        ch.writeInbound(new PingWebSocketFrame(Unpooled.copiedBuffer("p", StandardCharsets.UTF_8)));
        assertNull(ch.readOutbound(), "no automatic pong");
        ch.close();
        assertTrue(closed.await(5, TimeUnit.SECONDS));
        assertEquals(List.of("open", "ping", "close:1006"), events);
        ch.finishAndReleaseAll();
    }
}
