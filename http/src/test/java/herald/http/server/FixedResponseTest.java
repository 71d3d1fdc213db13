package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The String body fast path writes exactly the bytes {@link String#getBytes(Charset)} gives, or declines. */
class FixedResponseTest {
    private static final List<Charset> CHARSETS = List.of(StandardCharsets.UTF_8, StandardCharsets.US_ASCII,
        StandardCharsets.ISO_8859_1, StandardCharsets.UTF_16, Charset.forName("windows-1252"));
    /** ASCII, Latin-1, the BMP beyond it, and both halves of surrogate pairs (paired and lone). */
    private static final char[] ALPHABET = {'a', 'Z', '0', ' ', '\t', '\u007f', '\u0080', '\u00e9', '\u00ff',
        '\u0100', '\u20ac', '\ud83d', '\ude00', '\ud800', '\udc00', '\uffff'};

    @Test
    void randomStringsEncodeLikeGetBytesOrFallBack() {
        Random rnd = new Random(42);
        byte[] dst = new byte[FixedResponse.SMALL];
        int fast = 0;
        for (int round = 0; round < 20000; round++) {
            int n = rnd.nextInt(40);
            boolean asciiOnly = rnd.nextInt(3) == 0;
            char[] cs = new char[n];
            for (int i = 0; i < n; i++) {
                cs[i] = asciiOnly ? (char) rnd.nextInt(128) : ALPHABET[rnd.nextInt(ALPHABET.length)];
            }
            String s = new String(cs);
            for (Charset charset : CHARSETS) {
                int len = FixedResponse.singleBytes(s, charset, dst);
                if (len >= 0) {
                    fast++;
                    assertArrayEquals(s.getBytes(charset), Arrays.copyOf(dst, len), s + " in " + charset);
                }
            }
        }
        assertEquals(true, fast > 10000, "the fast path was taken " + fast + " times");
    }

    @Test
    void declinesWhatItCannotEncodeByteForChar() {
        byte[] dst = new byte[FixedResponse.SMALL];
        assertEquals(-1, FixedResponse.singleBytes("caf\u00e9", StandardCharsets.UTF_8, dst));
        assertEquals(4, FixedResponse.singleBytes("caf\u00e9", StandardCharsets.ISO_8859_1, dst));
        assertEquals((byte) 0xe9, dst[3]);
        assertEquals(-1, FixedResponse.singleBytes("caf\u00e9", StandardCharsets.US_ASCII, dst));
        assertEquals(-1, FixedResponse.singleBytes("\u0100", StandardCharsets.ISO_8859_1, dst));
        assertEquals(-1, FixedResponse.singleBytes("abc", StandardCharsets.UTF_16, dst), "not ASCII-compatible");
        assertEquals(-1, FixedResponse.singleBytes("x".repeat(FixedResponse.SMALL + 1), StandardCharsets.UTF_8, dst));
        assertEquals(FixedResponse.SMALL,
            FixedResponse.singleBytes("x".repeat(FixedResponse.SMALL), StandardCharsets.UTF_8, dst));
    }
}
