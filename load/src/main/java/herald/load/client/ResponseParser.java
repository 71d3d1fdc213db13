package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * An incremental HTTP/1.1 response parser for one connection: status line, the headers that frame the body
 * (Content-Length, Transfer-Encoding: chunked, Connection), fixed-length, chunked and read-until-close bodies,
 * and interim 1xx responses, which it skips. Bytes that do not make a whole unit yet (a head, a chunk-size
 * line) are kept in a cumulation buffer; everything else is parsed straight from the buffer read.
 */
public final class ResponseParser {
  /** Receives each whole response. */
  public interface Sink {
    /** A response is complete; {@code body} is null unless bodies are kept, and the sink owns it. */
    void onResponse(int status, ByteBuf body, boolean keepAlive);
  }

  /** Thrown on bytes that are not an HTTP/1.1 response. */
  public static final class ParseException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message, null, false, false);
    }
  }

  private static final int HEAD = 0, BODY_LENGTH = 1, CHUNK_SIZE = 2, CHUNK_DATA = 3, CHUNK_CRLF = 4,
      TRAILERS = 5, BODY_EOF = 6;
  private static final int MAX_HEAD = 64 * 1024;

  private final Sink sink;
  private final boolean keepBody;
  private final ByteBufAllocator alloc;
  private ByteBuf cumulation;
  private ByteBuf body;
  private int state = HEAD;
  private long remaining;
  private int status;
  private boolean keepAlive;
  private boolean noBody;

  public ResponseParser(Sink sink, boolean keepBody, ByteBufAllocator alloc) {
    this.sink = sink;
    this.keepBody = keepBody;
    this.alloc = alloc;
  }

  /** Tells the parser the next response answers a HEAD request (so it has no body). */
  public void expectNoBody(boolean headRequest) {
    this.noBody = headRequest;
  }

  /** True while a response is being read until the connection closes. */
  public boolean readingUntilClose() {
    return state == BODY_EOF;
  }

  /** True when no partial response has been seen. */
  public boolean idle() {
    return state == HEAD && (cumulation == null || !cumulation.isReadable());
  }

  /** Parses {@code in} (not released here). */
  public void feed(ByteBuf in) {
    if (cumulation != null && cumulation.isReadable()) {
      cumulation.writeBytes(in);
      run(cumulation);
      cumulation.discardReadBytes();
    } else {
      run(in);
      if (in.isReadable()) {
        if (cumulation == null) cumulation = alloc.heapBuffer(256);
        cumulation.clear().writeBytes(in);
      }
    }
    if (cumulation != null && cumulation.readableBytes() > MAX_HEAD) {
      throw new ParseException("response head or chunk line longer than " + MAX_HEAD + " bytes");
    }
  }

  /** The connection closed: completes a read-until-close body; returns false if a response was cut off. */
  public boolean closed() {
    if (state == BODY_EOF) {
      complete(false);
      return true;
    }
    return idle();
  }

  /** Frees buffers held. */
  public void release() {
    if (cumulation != null) {
      cumulation.release();
      cumulation = null;
    }
    if (body != null) {
      body.release();
      body = null;
    }
  }

  private void run(ByteBuf in) {
    while (in.isReadable()) {
      switch (state) {
        case HEAD -> { if (!head(in)) return; }
        case BODY_LENGTH -> {
          int n = (int) Math.min(remaining, in.readableBytes());
          take(in, n);
          remaining -= n;
          if (remaining == 0) complete(keepAlive);
        }
        case CHUNK_SIZE -> { if (!chunkSize(in)) return; }
        case CHUNK_DATA -> {
          int n = (int) Math.min(remaining, in.readableBytes());
          take(in, n);
          remaining -= n;
          if (remaining == 0) state = CHUNK_CRLF;
        }
        case CHUNK_CRLF -> {
          int eol = in.indexOf(in.readerIndex(), in.writerIndex(), (byte) '\n');
          if (eol < 0) return;
          in.readerIndex(eol + 1);
          state = CHUNK_SIZE;
        }
        case TRAILERS -> {
          int eol = in.indexOf(in.readerIndex(), in.writerIndex(), (byte) '\n');
          if (eol < 0) return;
          boolean empty = eol == in.readerIndex() || (eol == in.readerIndex() + 1 && in.getByte(in.readerIndex()) == '\r');
          in.readerIndex(eol + 1);
          if (empty) complete(keepAlive);
        }
        case BODY_EOF -> take(in, in.readableBytes());
        default -> throw new IllegalStateException("state " + state);
      }
    }
  }

  private void take(ByteBuf in, int n) {
    if (keepBody) {
      if (body == null) body = alloc.heapBuffer(Math.max(n, 256));
      body.writeBytes(in, n);
    } else {
      in.skipBytes(n);
    }
  }

  private void complete(boolean alive) {
    ByteBuf b = body;
    body = null;
    state = HEAD;
    noBody = false;
    if (keepBody && b == null) b = alloc.heapBuffer(0);
    sink.onResponse(status, b, alive);
  }

  /** Parses a whole head if present; returns false when more bytes are needed. */
  private boolean head(ByteBuf in) {
    int start = in.readerIndex(), end = in.writerIndex();
    int headEnd = -1;
    for (int i = in.indexOf(start, end, (byte) '\n'); i >= 0; i = in.indexOf(i + 1, end, (byte) '\n')) {
      if (i + 1 < end && in.getByte(i + 1) == '\n') { headEnd = i + 2; break; }
      if (i + 2 < end && in.getByte(i + 1) == '\r' && in.getByte(i + 2) == '\n') { headEnd = i + 3; break; }
    }
    if (headEnd < 0) return false;
    parseHead(in, start, headEnd);
    in.readerIndex(headEnd);
    return true;
  }

  private void parseHead(ByteBuf in, int start, int headEnd) {
    int eol = in.indexOf(start, headEnd, (byte) '\n');
    if (eol - start < 12 || in.getByte(start) != 'H' || in.getByte(start + 4) != '/') {
      throw new ParseException("not an HTTP response status line");
    }
    boolean http10 = in.getByte(start + 7) == '0';
    status = digit(in, start + 9) * 100 + digit(in, start + 10) * 10 + digit(in, start + 11);
    keepAlive = !http10;
    long length = -1;
    boolean chunked = false;
    for (int line = eol + 1; line < headEnd; ) {
      int next = in.indexOf(line, headEnd, (byte) '\n');
      int colon = in.indexOf(line, next, (byte) ':');
      if (colon > line) {
        int v = colon + 1, ve = next;
        while (v < ve && in.getByte(v) == ' ') v++;
        while (ve > v && (in.getByte(ve - 1) == '\r' || in.getByte(ve - 1) == ' ')) ve--;
        if (nameIs(in, line, colon, "content-length")) length = parseLong(in, v, ve);
        else if (nameIs(in, line, colon, "transfer-encoding")) chunked = contains(in, v, ve, "chunked");
        else if (nameIs(in, line, colon, "connection")) {
          if (contains(in, v, ve, "close")) keepAlive = false;
          else if (contains(in, v, ve, "keep-alive")) keepAlive = true;
        }
      }
      line = next + 1;
    }
    if (status >= 100 && status < 200 && status != 101) return;  // interim: stay in HEAD
    if (noBody || status == 204 || status == 304) complete(keepAlive);
    else if (chunked) state = CHUNK_SIZE;
    else if (length == 0) complete(keepAlive);
    else if (length > 0) { remaining = length; state = BODY_LENGTH; }
    else { keepAlive = false; state = BODY_EOF; }
  }

  private boolean chunkSize(ByteBuf in) {
    int eol = in.indexOf(in.readerIndex(), in.writerIndex(), (byte) '\n');
    if (eol < 0) return false;
    long size = 0;
    int digits = 0;
    for (int i = in.readerIndex(); i < eol; i++) {
      int d = Character.digit(in.getByte(i), 16);
      if (d < 0) break;
      size = size * 16 + d;
      if (++digits > 15) throw new ParseException("chunk size too large");
    }
    if (digits == 0) throw new ParseException("bad chunk size line");
    in.readerIndex(eol + 1);
    if (size == 0) state = TRAILERS;
    else { remaining = size; state = CHUNK_DATA; }
    return true;
  }

  private static int digit(ByteBuf in, int i) {
    int d = in.getByte(i) - '0';
    if (d < 0 || d > 9) throw new ParseException("bad status code");
    return d;
  }

  private static long parseLong(ByteBuf in, int from, int to) {
    if (from >= to) throw new ParseException("empty Content-Length");
    long n = 0;
    for (int i = from; i < to; i++) {
      int d = in.getByte(i) - '0';
      if (d < 0 || d > 9 || n > Long.MAX_VALUE / 10) throw new ParseException("bad Content-Length");
      n = n * 10 + d;
    }
    return n;
  }

  private static boolean nameIs(ByteBuf in, int from, int to, String lowerName) {
    if (to - from != lowerName.length()) return false;
    for (int i = 0; i < lowerName.length(); i++) {
      if ((in.getByte(from + i) | 0x20) != lowerName.charAt(i) && in.getByte(from + i) != lowerName.charAt(i)) return false;
    }
    return true;
  }

  private static boolean contains(ByteBuf in, int from, int to, String lowerWord) {
    int n = lowerWord.length();
    outer:
    for (int s = from; s + n <= to; s++) {
      for (int i = 0; i < n; i++) {
        if ((in.getByte(s + i) | 0x20) != lowerWord.charAt(i)) continue outer;
      }
      return true;
    }
    return false;
  }
}
