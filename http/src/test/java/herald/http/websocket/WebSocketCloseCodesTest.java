package herald.http.websocket;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufUtil;
import org.junit.jupiter.api.Test;

/** Which close codes a close frame may carry (RFC 6455 7.4, IANA registry), and reasons cut to 123 bytes. */
class WebSocketCloseCodesTest {
    @Test
    void validCodesAreThoseAnEndpointMaySend() {
        for (int code : new int[] {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000,
                                   4000, 4999}) {
            assertTrue(CloseCodes.valid(code), "valid: " + code);
        }
        for (int code : new int[] {-1, 0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535}) {
            assertFalse(CloseCodes.valid(code), "invalid: " + code);
        }
    }

    @Test
    void reasonsAreCutAtACharacterBoundaryToFitAControlFrame() {
        assertEquals("", CloseCodes.fit(null));
        assertEquals("short", CloseCodes.fit("short"));
        String ascii = "a".repeat(200);
        assertEquals(123, CloseCodes.fit(ascii).length());
        String euro = "\u20ac".repeat(50); // 3 bytes each: 41 fit in 123
        assertEquals(41, CloseCodes.fit(euro).length());
        String emoji = "a" + "\ud83d\ude00".repeat(40); // 1 + 4 bytes each: 1 + 30 * 4 = 121
        String cut = CloseCodes.fit(emoji);
        assertEquals(121, ByteBufUtil.utf8Bytes(cut));
        assertFalse(Character.isHighSurrogate(cut.charAt(cut.length() - 1)), "no half surrogate pair");
    }
}
