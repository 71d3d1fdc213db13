package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Charset parameters of a response Content-Type. */
class CharsetsTest {
    @Test
    void picksTheDeclaredCharsetElseUtf8() {
        assertEquals(StandardCharsets.UTF_8, Charsets.of(null));
        assertEquals(StandardCharsets.UTF_8, Charsets.of("text/plain"));
        assertEquals(StandardCharsets.ISO_8859_1, Charsets.of("text/plain; charset=ISO-8859-1"));
        assertEquals(StandardCharsets.UTF_16BE, Charsets.of("text/plain;CHARSET=\"utf-16be\"; q=1"));
        assertEquals(StandardCharsets.UTF_8, Charsets.of("text/plain; charset=no-such-charset"));
    }
}
