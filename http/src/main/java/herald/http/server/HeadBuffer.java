package herald.http.server;

import java.util.Arrays;

/**
 * A reusable byte array the response head (status line and headers) is assembled in before one copy into the
 * outgoing buffer: many small copies into a ByteBuf cost more than one. Event-loop confined, one per event loop ({@link LoopState}).
 */
final class HeadBuffer {
    byte[] bytes = new byte[512];
    int size;

    HeadBuffer reset() {
        size = 0;
        return this;
    }

    private void ensure(int more) {
        if (size + more > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
        }
    }

    void put(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, bytes, size, b.length);
        size += b.length;
    }

    void put(byte[] b, int from, int length) {
        ensure(length);
        System.arraycopy(b, from, bytes, size, length);
        size += length;
    }

    /** Latin-1 characters as bytes (header text is validated elsewhere). */
    void putAscii(String s) {
        int n = s.length();
        ensure(n);
        for (int i = 0; i < n; i++) {
            bytes[size++] = (byte) s.charAt(i);
        }
    }

    void putLong(long v) {
        if (v < 10) {
            ensure(1);
            bytes[size++] = (byte) ('0' + v);
            return;
        }
        int digits = 0;
        for (long x = v; x > 0; x /= 10) {
            digits++;
        }
        ensure(digits);
        int end = size + digits;
        for (int i = end - 1; i >= size; i--) {
            bytes[i] = (byte) ('0' + v % 10);
            v /= 10;
        }
        size = end;
    }

    void crlf() {
        ensure(2);
        bytes[size++] = '\r';
        bytes[size++] = '\n';
    }
}
