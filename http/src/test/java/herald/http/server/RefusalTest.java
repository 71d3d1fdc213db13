package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@link Refusal}: the answers the server makes itself. */
class RefusalTest {
    @Test
    void theDefaultAnswerBodyIsTheReasonPhraseAndTheMessage() {
        assertEquals("Bad Request: the request-target holds a raw non-ASCII byte: percent-encode it as UTF-8 "
            + "(/caf%C3%A9, not /caf\u00e9)", new String(Refusal.NON_ASCII_TARGET.body, StandardCharsets.UTF_8));
        for (Refusal r : Refusal.values()) {
            assertEquals(r, Refusal.valueOf(r.name()));
            assertTrue(new String(r.body, StandardCharsets.UTF_8).startsWith(StatusLines.reason(r.status) + ": "), r.name());
            assertEquals(r.reason, r.info.valAt(clojure.lang.Keyword.intern("reason")));
        }
    }
}
