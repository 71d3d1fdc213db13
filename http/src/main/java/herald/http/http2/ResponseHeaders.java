package herald.http.http2;

import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.util.AsciiString;

/**
 * An HTTP/2 response header block from the header lines the response writer produced for HTTP/1.1 ("Name: value"
 * CRLF, names and values already validated): names lower-cased, and the connection-specific fields HTTP/2
 * forbids (RFC 9113 8.2.2) left out, so the rules for a Ring response's headers are written once.
 */
public final class ResponseHeaders {
    private static final AsciiString KEEP_ALIVE = AsciiString.cached("keep-alive");
    private static final AsciiString PROXY_CONNECTION = AsciiString.cached("proxy-connection");
    private static final AsciiString UPGRADE = AsciiString.cached("upgrade");
    private static final AsciiString CONNECTION = AsciiString.cached("connection");
    private static final AsciiString TRANSFER_ENCODING = AsciiString.cached("transfer-encoding");

    private ResponseHeaders() {}

    /** The headers of a response with {@code status} whose header lines are {@code block[0, size)}. */
    public static Http2Headers of(int status, byte[] block, int size) {
        Http2Headers hs = new DefaultHttp2Headers(false);
        hs.status(HttpResponseStatus.valueOf(status).codeAsText());
        int i = 0;
        while (i < size) {
            int colon = indexOf(block, (byte) ':', i, size);
            int eol = indexOf(block, (byte) '\r', colon, size);
            AsciiString name = new AsciiString(block, i, colon - i, true).toLowerCase();
            int v = colon + 1;
            while (v < eol && (block[v] == ' ' || block[v] == '\t')) {
                v++;
            }
            if (!connectionSpecific(name)) {
                hs.add(name, new AsciiString(block, v, eol - v, true));
            }
            i = eol + 2;
        }
        return hs;
    }

    private static boolean connectionSpecific(AsciiString name) {
        return name.contentEquals(CONNECTION) || name.contentEquals(KEEP_ALIVE) || name.contentEquals(UPGRADE)
            || name.contentEquals(TRANSFER_ENCODING) || name.contentEquals(PROXY_CONNECTION);
    }

    private static int indexOf(byte[] b, byte c, int from, int end) {
        for (int i = from; i < end; i++) {
            if (b[i] == c) {
                return i;
            }
        }
        return end;
    }
}
