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
}
