package herald.http.fuzz;

import clojure.lang.AFn;
import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import clojure.lang.RT;
import com.code_intelligence.jazzer.junit.FuzzTest;
import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import herald.http.server.ServerPipelines;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * Fuzzes herald's HTTP/1.1 decoder (heads, fixed and chunked bodies, pipelining) through the pipeline the server
 * gives a plaintext connection (preface detector, decoder, h2c upgrade watcher, connection handler), with small
 * limits so the fuzzer reaches them. Per input: no exception escapes; every answer is the handler's 200 or a status
 * the server documents ({@code Refusal}), plus 100 and 101; the handler ran once per 200 and saw a body no longer
 * than the limit; the same bytes fed in one read and cut into three reads give the same answers; every buffer is
 * released and Netty's leak detector stays quiet.
 */
class Http1DecoderFuzzTest extends ChannelFuzzTarget {
    static final int MAX_LINE = 256;
    static final int MAX_HEADER = 1024;
    static final long MAX_BODY = 1000;
    private static final ServerConfig CONFIG = ServerConfig.builder().mode(HandlerMode.EVENT_LOOP)
        .maxRequestLineBytes(MAX_LINE).maxHeaderBytes(MAX_HEADER).maxBodyBytes(MAX_BODY)
        .idleTimeoutMs(0).requestTimeoutMs(0).headerTimeoutMs(0).serverHeader(null).build();
    private static final Set<Integer> STATUSES = allowed();
    private static final Pattern STATUS_LINE = Pattern.compile("HTTP/1\\.[01] (\\d{3}) ");
    private static final Pattern DATE = Pattern.compile("\r\n[Dd]ate: [^\r]*");
    /** An IMF-fixdate anywhere: the date of an HTTP/2 answer after an h2c upgrade is an HPACK literal. */
    private static final Pattern HTTP_DATE = Pattern.compile(
        "[A-Z][a-z]{2}, \\d{2} [A-Z][a-z]{2} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT");
    private static final Keyword BODY = Keyword.intern("body");

    private static Set<Integer> allowed() {
        Set<Integer> s = ServerPipelines.refusalStatuses();
        s.addAll(List.of(100, 101, 200));
        return s;
    }

    /** What one connection answered, Date values removed, and how many requests its handler saw. */
    record Run(String answers, int handled) {}

    static Run run(byte[] data, int... cuts) {
        List<Throwable> errors = new ArrayList<>();
        int[] handled = {0};
        AFn handler = new AFn() {
            @Override
            public Object invoke(Object req) {
                handled[0]++;
                long n = 0;
                Object body = RT.get(req, BODY);
                if (body instanceof InputStream in) {
                    try (in) {
                        n = in.transferTo(java.io.OutputStream.nullOutputStream());
                    } catch (IOException e) {
                        throw new AssertionError("reading a request body failed", e);
                    }
                }
                if (n > MAX_BODY) {
                    throw new AssertionError("the handler got a body of " + n + " bytes, over the limit");
                }
                IPersistentMap resp = PersistentArrayMap.createAsIfByAssoc(new Object[] {
                    Keyword.intern("status"), 200L, BODY, "ok " + n});
                return resp;
            }
        };
        EmbeddedChannel ch = ServerPipelines.plaintext(CONFIG, handler, null, errors);
        FuzzChecks checks = new FuzzChecks();
        List<String> others = new ArrayList<>();
        StringBuilder out = new StringBuilder();
        try {
            int from = 0;
            for (int cut : cuts) {
                checks.write(ch, data, from, cut);
                out.append(new String(FuzzChecks.output(ch, others), StandardCharsets.ISO_8859_1));
                from = cut;
            }
            checks.write(ch, data, from, data.length);
            out.append(new String(FuzzChecks.output(ch, others), StandardCharsets.ISO_8859_1));
        } finally {
            checks.finish(ch);
        }
        if (!errors.isEmpty()) {
            throw new AssertionError("the server logged an error", errors.get(0));
        }
        // two runs straddling a second differ only in their dates
        String answers = DATE.matcher(out).replaceAll("\r\nDate: -");
        return new Run(HTTP_DATE.matcher(answers).replaceAll("<date>"), handled[0]);
    }

    @FuzzTest(maxDuration = "2m")
    void decode(byte[] data) {
        Run whole = run(data);
        int ok = 0;
        Matcher m = STATUS_LINE.matcher(whole.answers());
        while (m.find()) {
            int status = Integer.parseInt(m.group(1));
            if (!STATUSES.contains(status)) {
                throw new AssertionError("undocumented status " + status + " in " + whole.answers());
            }
            ok += status == 200 ? 1 : 0;
        }
        if (ok != whole.handled() && !whole.answers().contains(" 101 ")) {
            throw new AssertionError(whole.handled() + " requests handled, " + ok + " answered 200");
        }
        if (data.length >= 3) {
            CRC32 crc = new CRC32();
            crc.update(data);
            long h = crc.getValue();
            int a = 1 + (int) (h % (data.length - 1));
            int b = a + (int) ((h >>> 16) % (data.length - a));
            Run cut = run(data, a, b);
            if (!cut.equals(whole)) {
                throw new AssertionError("cut at " + a + " and " + b + " the answers differ:\n" + whole + "\n---\n" + cut);
            }
        }
    }

}
