package herald.http.server;

import clojure.lang.ISeq;
import clojure.lang.RT;
import java.io.InputStream;
import java.nio.charset.Charset;

/**
 * Writes a streamed body on a virtual thread: an InputStream (closed after), an ISeq (each element str-ed,
 * written and flushed), or any other type through the StreamableResponseBody hook, whose implementation
 * closes the stream when done (which may be later, from another thread: server-sent events).
 */
final class BodyStreamer implements Runnable {
    private final HttpConnection c;
    private final Exchange ex;
    private final Object response;
    private final Object body;
    private final boolean chunked;
    private final Charset charset;

    BodyStreamer(HttpConnection c, Exchange ex, Object response, Object body, boolean chunked, Charset charset) {
        this.c = c;
        this.ex = ex;
        this.response = response;
        this.body = body;
        this.chunked = chunked;
        this.charset = charset;
    }

    @Override
    public void run() {
        ChannelOutputStream[] ref = new ChannelOutputStream[1];
        ChannelOutputStream out = new ChannelOutputStream(c.ctx().channel(), chunked, () -> {
            long n = ref[0].written();
            c.onLoop(() -> {
                ex.bytes = n;
                c.exchanges.finished(ex);
            });
        });
        ref[0] = out;
        try {
            if (body instanceof InputStream in) {
                try (in) {
                    in.transferTo(out);
                }
                out.close();
            } else if (body instanceof ISeq) {
                for (ISeq s = RT.seq(body); s != null; s = s.next()) {
                    Object o = s.first();
                    String str = o == null ? "" : o.toString();
                    if (!str.isEmpty()) {
                        out.write(str.getBytes(charset));
                        out.flush();
                    }
                }
                out.close();
            } else {
                c.server.hooks.bodyWriter.invoke(body, response, out);
            }
        } catch (Throwable t) {
            if (c.ctx().channel().isActive()) {
                c.server.logError(t, ex.ringRequest);
            }
            ex.keepAlive = false;
            out.abort();
            c.ctx().channel().close();
        }
    }
}
