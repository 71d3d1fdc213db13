package herald.json.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import herald.json.JsonReader;
import herald.json.JsonWriter;
import herald.json.MalformedJsonException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The JSON reader's findings of fuzzing campaigns (bench/fuzz.sh), minimized, as plain tests (numbered as in
 * bench/results/fuzz.md, with the other codecs' findings in herald-http's FuzzFindingsTest); the campaign's own
 * input is also in the target's corpus.
 */
class FuzzFindingsTest {
    /**
     * Finding 2 (json): {@code 1e400} read as a Double was Infinity, which JsonWriter refuses, so a valid document did not round-trip (a handler
     * echoing it failed with 500). Now it is a MalformedJsonException; with BigDecimals it reads exactly.
     */
    @Test
    void aDecimalBeyondADoublesRangeIsMalformedNotInfinity() {
        byte[] doc = "[1e400]".getBytes(StandardCharsets.UTF_8);
        MalformedJsonException e = assertThrows(
            MalformedJsonException.class, () -> JsonReader.DEFAULT.read(doc, 0, doc.length));
        assertTrue(e.detail().contains("beyond the range of a double"), e.getMessage());
        assertEquals(1, e.line());
        assertEquals(2, e.column());
        assertEquals("[-1.0E-300]", new String(JsonWriter.DEFAULT.writeBytes(
            JsonReader.DEFAULT.read("[-1e-300]")), StandardCharsets.UTF_8));
        new JsonReaderFuzzTest().read(doc); // and the target's invariant holds on it
    }

    /**
     * Finding 3 (json): with BigDecimals, a decimal whose exponent is past BigDecimal's range ({@code 1e10000005807}: the scale is an int)
     * threw Jackson's NumberFormatException out of the reader, not its documented MalformedJsonException.
     */
    @Test
    void anExponentPastBigDecimalsRangeIsMalformed() {
        JsonReader exact = new JsonReader(JsonReader.Keys.STRINGS,
            null, true, false, 10, 100);
        for (String doc : new String[] {"1e10000005807", "[[111e10000001110,0]]"}) {
            MalformedJsonException e = assertThrows(
                MalformedJsonException.class, () -> exact.read(doc));
            assertTrue(e.detail().contains("cannot be read as a BigDecimal"), e.getMessage());
            new JsonReaderFuzzTest().read(doc.getBytes(StandardCharsets.UTF_8));
        }
    }
}
