package herald.http.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * Every finding of a fuzzing campaign (bench/fuzz.sh), minimized, as a plain test; the campaign's own input is also
 * in the target's corpus. bench/results/fuzz.md lists them with the fix.
 */
class FuzzFindingsTest {
    /**
     * Finding 1 (http1): a request line with a malformed version followed by a malformed header line got 400
     * "bad-header-line" when the head arrived in one read, and 400 "bad-version" when it arrived cut after the
     * request line (judged at its CRLF). Now the request line is judged first either way.
     */
    @Test
    void aBadRequestLineIsJudgedBeforeTheHeaderLinesHoweverTheHeadArrives() {
        byte[] head = "GET /p 103\r\nC/1.1\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
        Http1DecoderFuzzTest.Run whole = Http1DecoderFuzzTest.run(head);
        assertTrue(whole.answers().startsWith("HTTP/1.1 400 "), whole.answers());
        assertTrue(whole.answers().contains("the version is not HTTP/1.0 or HTTP/1.1"), whole.answers());
        for (int cut = 1; cut < head.length; cut++) {
            assertEquals(whole, Http1DecoderFuzzTest.run(head, cut), "cut at " + cut);
        }
    }

    /**
     * Finding 2 (json): {@code 1e400} read as a Double was Infinity, which JsonWriter refuses, so a valid document did not round-trip (a handler
     * echoing it failed with 500). Now it is a MalformedJsonException; with BigDecimals it reads exactly.
     */
    @Test
    void aDecimalBeyondADoublesRangeIsMalformedNotInfinity() {
        byte[] doc = "[1e400]".getBytes(StandardCharsets.UTF_8);
        herald.http.codec.MalformedJsonException e = org.junit.jupiter.api.Assertions.assertThrows(
            herald.http.codec.MalformedJsonException.class, () -> herald.http.codec.JsonReader.DEFAULT.read(doc, 0, doc.length));
        assertTrue(e.detail().contains("beyond the range of a double"), e.getMessage());
        assertEquals(1, e.line());
        assertEquals(2, e.column());
        assertEquals("[-1.0E-300]", new String(herald.http.codec.JsonWriter.DEFAULT.writeBytes(
            herald.http.codec.JsonReader.DEFAULT.read("[-1e-300]")), StandardCharsets.UTF_8));
        new JsonReaderFuzzTest().read(doc); // and the target's invariant holds on it
    }

    /**
     * Finding 3 (json): with BigDecimals, a decimal whose exponent is past BigDecimal's range ({@code 1e10000005807}: the scale is an int)
     * threw Jackson's NumberFormatException out of the reader, not its documented MalformedJsonException.
     */
    @Test
    void anExponentPastBigDecimalsRangeIsMalformed() {
        herald.http.codec.JsonReader exact = new herald.http.codec.JsonReader(herald.http.codec.JsonReader.Keys.STRINGS,
            null, true, false, 10, 100);
        for (String doc : new String[] {"1e10000005807", "[[111e10000001110,0]]"}) {
            herald.http.codec.MalformedJsonException e = org.junit.jupiter.api.Assertions.assertThrows(
                herald.http.codec.MalformedJsonException.class, () -> exact.read(doc));
            assertTrue(e.detail().contains("cannot be read as a BigDecimal"), e.getMessage());
            new JsonReaderFuzzTest().read(doc.getBytes(StandardCharsets.UTF_8));
        }
    }
}
