package herald.http.bench;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Answers {@code /plaintext} and {@code /json}: every response of one read batch is encoded by hand into one
 * buffer, written and flushed once in {@link #channelReadComplete}. One instance per connection.
 */
final class HelloHandler extends ChannelInboundHandlerAdapter {
  private static final JsonFactory JSON = new JsonFactory();
  private static final byte[] HELLO = ascii("Hello, World!");
  private static final byte[] PLAINTEXT_HEAD = ascii(
      "HTTP/1.1 200 OK\r\nServer: Netty\r\nContent-Type: text/plain\r\nContent-Length: 13\r\nDate: ");
  private static final byte[] JSON_HEAD = ascii(
      "HTTP/1.1 200 OK\r\nServer: Netty\r\nContent-Type: application/json\r\nContent-Length: ");
  private static final byte[] DATE = ascii("\r\nDate: ");
  private static final byte[] KEEP_ALIVE = ascii("\r\nConnection: keep-alive");
  private static final byte[] CLOSE = ascii("\r\nConnection: close");
  private static final byte[] END = ascii("\r\n\r\n");

  /** The JSON body of the current request; reused, as the handler is confined to its event loop. */
  private final Scratch scratch = new Scratch();
  /** Responses of the current read batch, null when there are none. */
  private ByteBuf out;
  /** Set when a response asked for the connection to be closed after the batch is written. */
  private boolean closeAfterFlush;

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    try {
      if (msg instanceof HttpRequest req && !closeAfterFlush) {
        respond(ctx, req);
      }
    } finally {
      ReferenceCountUtil.release(msg);
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    ByteBuf batch = out;
    out = null;
    if (batch != null) {
      if (closeAfterFlush) {
        ctx.writeAndFlush(batch).addListener(ChannelFutureListener.CLOSE);
      } else {
        ctx.writeAndFlush(batch, ctx.voidPromise());
      }
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (out != null) {
      out.release();
      out = null;
    }
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    ctx.close();
  }

  private void respond(ChannelHandlerContext ctx, HttpRequest req) {
    if (out == null) {
      out = ctx.alloc().directBuffer(4096);
    }
    if (req.decoderResult().isFailure()) {
      closeAfterFlush = true;
      simple(out, "400 Bad Request", false, false);
      return;
    }
    boolean keepAlive = HttpUtil.isKeepAlive(req);
    boolean http10 = req.protocolVersion() == HttpVersion.HTTP_1_0;
    closeAfterFlush = !keepAlive;
    String uri = req.uri();
    boolean known = uri.equals("/plaintext") || uri.equals("/json");
    if (!known) {
      simple(out, "404 Not Found", keepAlive, http10);
    } else if (req.method() != HttpMethod.GET) {
      simple(out, "405 Method Not Allowed", keepAlive, http10);
    } else if (keepAlive && !http10 && uri.equals("/plaintext")) {
      out.writeBytes(PLAINTEXT_HEAD).writeBytes(HttpDate.bytes()).writeBytes(END).writeBytes(HELLO);
    } else if (keepAlive && !http10) {
      writeJson(out);
    } else {
      general(out, uri, keepAlive, http10);
    }
  }

  private void writeJson(ByteBuf buf) {
    serialiseMessage();
    buf.writeBytes(JSON_HEAD);
    writeDecimal(buf, scratch.length);
    buf.writeBytes(DATE).writeBytes(HttpDate.bytes()).writeBytes(END).writeBytes(scratch.bytes, 0, scratch.length);
  }

  /** The routes for HTTP/1.0 or Connection: close, which need a Connection header. */
  private void general(ByteBuf buf, String uri, boolean keepAlive, boolean http10) {
    byte[] body = HELLO;
    int length = HELLO.length;
    String type = "text/plain";
    if (uri.equals("/json")) {
      serialiseMessage();
      body = scratch.bytes;
      length = scratch.length;
      type = "application/json";
    }
    head(buf, "200 OK", type, length, keepAlive, http10);
    buf.writeBytes(body, 0, length);
  }

  private static void simple(ByteBuf buf, String status, boolean keepAlive, boolean http10) {
    byte[] body = ascii(status);
    head(buf, status, "text/plain", body.length, keepAlive, http10);
    buf.writeBytes(body);
  }

  private static void head(ByteBuf buf, String status, String type, int length, boolean keepAlive,
      boolean http10) {
    buf.writeCharSequence("HTTP/1.1 " + status + "\r\nServer: Netty\r\nContent-Type: " + type
        + "\r\nContent-Length: " + length, StandardCharsets.US_ASCII);
    if (!keepAlive) {
      buf.writeBytes(CLOSE);
    } else if (http10) {
      buf.writeBytes(KEEP_ALIVE);
    }
    buf.writeBytes(DATE).writeBytes(HttpDate.bytes()).writeBytes(END);
  }

  /** Serialises {"message":"Hello, World!"} into {@link #scratch} with a fresh generator, as per request. */
  private void serialiseMessage() {
    scratch.length = 0;
    try (JsonGenerator g = JSON.createGenerator(scratch)) {
      g.writeStartObject();
      g.writeStringField("message", "Hello, World!");
      g.writeEndObject();
    } catch (IOException e) {
      throw new IllegalStateException("cannot serialise the JSON message", e);
    }
  }

  private static void writeDecimal(ByteBuf buf, int n) {
    if (n >= 10) {
      writeDecimal(buf, n / 10);
    }
    buf.writeByte('0' + n % 10);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /** A growable byte sink that a {@link JsonGenerator} writes into and the handler copies from. */
  private static final class Scratch extends OutputStream {
    byte[] bytes = new byte[64];
    int length;

    @Override
    public void write(int b) {
      ensure(1);
      bytes[length++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
      ensure(len);
      System.arraycopy(b, off, bytes, length, len);
      length += len;
    }

    private void ensure(int more) {
      if (length + more > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + more));
      }
    }
  }
}
