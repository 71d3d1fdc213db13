// bench/soak/SoakClients.java: the mixed clients of bench/soak.sh (run as a single-file program: java SoakClients.java).
// Beside herald-load's constant-rate plaintext they make the traffic a soak needs, each kind checking every answer:
//   churn: keep-alive connections that send 1-10 requests and close (the last sometimes with Connection: close)
//   slow:  GET /stream (chunked, STREAM_KB KiB) read through a small receive buffer, a little at a time
//   upload: POST /upload of 1, 4 or 16 MiB (Content-Length or chunked); the answer's SHA-256 must match
//   ws:    WebSocket sessions of 50 echoed messages (text up to 4 KiB, binary up to 64 KiB), then closed and reopened
// Prints a `clients ...` line per minute and at the end; errors (each with its first messages) go to stderr.
// Usage: java SoakClients.java PORT (or compiled: java -cp DIR SoakClients PORT SECONDS [churn=4] [slow=4] [upload=2] [ws=4] [stream_kb=4096])
import java.io.*;
import java.net.*;
import java.net.http.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

public class SoakClients {
    static int port;
    static volatile boolean running = true;
    static final ConcurrentHashMap<String, LongAdder> counts = new ConcurrentHashMap<>();
    static final AtomicLong errors = new AtomicLong();
    static final byte[] uploadData = new byte[16 << 20];
    static final Map<Integer, String> uploadDigest = new HashMap<>();
    static int streamKb;
    /** Seconds any one step may take (a connect, a send, an echo, a whole response's next bytes). */
    static final int TIMEOUT_S = 30;

    static void count(String k, long n) { counts.computeIfAbsent(k, x -> new LongAdder()).add(n); }
    static long get(String k) { LongAdder a = counts.get(k); return a == null ? 0 : a.sum(); }

    static void error(String kind, Throwable t) {
        long n = errors.incrementAndGet();
        count("errors_" + kind, 1);
        if (n <= 20) System.err.println("soak-clients error " + kind + ": " + t);
    }

    static String hex(byte[] b) { return HexFormat.of().formatHex(b); }

    // --- a minimal HTTP/1.1 response reader over a raw socket --------------------------------------------------
    static String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) throw new EOFException("connection closed in a response head");
            if (c != '\r') sb.append((char) c);
        }
        return sb.toString();
    }

    /** Reads one response; returns its body length, checking the status and, when check, the stream pattern. */
    static long response(InputStream in, boolean check, int pauseEveryKb, int pauseMs) throws Exception {
        String status = line(in);
        if (!status.startsWith("HTTP/1.1 200")) throw new IOException("status line: " + status);
        long length = -1; boolean chunked = false;
        for (String h; !(h = line(in)).isEmpty(); ) {
            String l = h.toLowerCase(Locale.ROOT);
            if (l.startsWith("content-length:")) length = Long.parseLong(l.substring(15).trim());
            if (l.startsWith("transfer-encoding:") && l.contains("chunked")) chunked = true;
        }
        byte[] buf = new byte[4096];
        long pos = 0, sincePause = 0;
        while (true) {
            long n;
            if (chunked) {
                n = Long.parseLong(line(in).trim().split(";")[0], 16);
                if (n == 0) { while (!line(in).isEmpty()) { } return pos; }
            } else {
                if (length < 0) throw new IOException("no Content-Length and not chunked");
                n = length - pos;
                if (n == 0) return pos;
            }
            long left = n;
            while (left > 0) {
                int r = in.read(buf, 0, (int) Math.min(buf.length, left));
                if (r < 0) throw new EOFException("connection closed in a body at byte " + pos);
                if (check) for (int i = 0; i < r; i++) {
                    if (buf[i] != (byte) ((pos + i) % 251)) throw new IOException("stream byte " + (pos + i) + " is wrong");
                }
                pos += r; left -= r; sincePause += r;
                if (pauseEveryKb > 0 && sincePause >= pauseEveryKb * 1024L) { sincePause = 0; Thread.sleep(pauseMs); }
            }
            if (chunked) { if (!line(in).isEmpty()) throw new IOException("no CRLF after a chunk"); } else return pos;
        }
    }

    static Socket socket(int rcvbuf) throws IOException {
        Socket s = new Socket();
        if (rcvbuf > 0) s.setReceiveBufferSize(rcvbuf);
        s.setSoTimeout(TIMEOUT_S * 1000);
        s.connect(new InetSocketAddress("127.0.0.1", port), TIMEOUT_S * 1000);
        return s;
    }

    // --- the client kinds --------------------------------------------------------------------------------------
    static void churn(Random rnd) throws Exception {
        try (Socket s = socket(0)) {
            OutputStream out = s.getOutputStream();
            InputStream in = new BufferedInputStream(s.getInputStream());
            int n = 1 + rnd.nextInt(10);
            boolean closeLast = rnd.nextBoolean();
            for (int i = 0; i < n; i++) {
                String close = (i == n - 1 && closeLast) ? "Connection: close\r\n" : "";
                out.write(("GET /plaintext HTTP/1.1\r\nHost: soak\r\n" + close + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
                if (response(in, false, 0, 0) != 13) throw new IOException("plaintext body length");
                count("churn_reqs", 1);
            }
            if (closeLast && in.read() != -1) throw new IOException("no close after Connection: close");
        }
        count("churn_conns", 1);
        Thread.sleep(5);
    }

    static void slow(Random rnd) throws Exception {
        try (Socket s = socket(16 * 1024)) {
            s.getOutputStream().write(("GET /stream?kb=" + streamKb + " HTTP/1.1\r\nHost: soak\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            // about 4 MB/s at most: 64 KiB, then 10 ms asleep (+ the pattern check)
            long n = response(new BufferedInputStream(s.getInputStream(), 4096), true, 64, 10);
            if (n != streamKb * 1024L) throw new IOException("stream of " + n + " bytes");
            count("streams", 1); count("stream_kb", n / 1024);
        }
    }

    static void upload(HttpClient client, Random rnd) throws Exception {
        int mb = new int[] {1, 4, 16}[rnd.nextInt(3)];
        boolean chunked = rnd.nextBoolean();
        HttpRequest.BodyPublisher body = chunked
            ? HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(uploadData, 0, mb << 20))
            : HttpRequest.BodyPublishers.ofByteArray(uploadData, 0, mb << 20);
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/upload"))
            .timeout(Duration.ofSeconds(2 * TIMEOUT_S)).POST(body).build();
        HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
        String want = (mb << 20) + " " + uploadDigest.get(mb);
        if (r.statusCode() != 200 || !want.equals(r.body())) {
            throw new IOException("upload " + mb + " MiB" + (chunked ? " chunked" : "") + ": " + r.statusCode() + " " + r.body());
        }
        count("uploads", 1); count("upload_mb", mb);
        Thread.sleep(200);
    }

    /** Waits up to TIMEOUT_S for f; a timeout says what was awaited. */
    static <T> T await(CompletableFuture<T> f, String what) throws Exception {
        try { return f.get(TIMEOUT_S, TimeUnit.SECONDS); }
        catch (TimeoutException e) { throw new IOException("websocket " + what + ": nothing within " + TIMEOUT_S + " s"); }
    }

    static void ws(HttpClient client, Random rnd) throws Exception {
        BlockingQueue<Object> echoes = new LinkedBlockingQueue<>();
        WebSocket.Listener listener = new WebSocket.Listener() {
            StringBuilder text = new StringBuilder();
            ByteArrayOutputStream bin = new ByteArrayOutputStream();
            public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                text.append(data);
                if (last) { echoes.add(text.toString()); text = new StringBuilder(); }
                w.request(1); return null;
            }
            public CompletionStage<?> onBinary(WebSocket w, ByteBuffer data, boolean last) {
                byte[] b = new byte[data.remaining()]; data.get(b); bin.writeBytes(b);
                if (last) { echoes.add(bin.toByteArray()); bin = new ByteArrayOutputStream(); }
                w.request(1); return null;
            }
            public void onError(WebSocket w, Throwable t) { echoes.add(t); }
        };
        WebSocket w = await(client.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(TIMEOUT_S))
            .buildAsync(URI.create("ws://127.0.0.1:" + port + "/ws"), listener), "open");
        try {
            for (int i = 0; i < 50; i++) {
                Object sent;
                if (rnd.nextInt(4) == 0) {
                    byte[] b = new byte[1 + rnd.nextInt(64 * 1024)]; rnd.nextBytes(b); sent = b;
                    await(w.sendBinary(ByteBuffer.wrap(b), true), "send");
                } else {
                    char[] c = new char[1 + rnd.nextInt(4096)];
                    for (int j = 0; j < c.length; j++) c[j] = (char) ('a' + rnd.nextInt(26));
                    sent = new String(c);
                    await(w.sendText((String) sent, true), "send");
                }
                Object got = echoes.poll(TIMEOUT_S, TimeUnit.SECONDS);
                if (got instanceof Throwable t) throw new IOException("websocket error", t);
                boolean same = sent instanceof byte[] b ? got instanceof byte[] g && Arrays.equals(b, g) : sent.equals(got);
                if (!same) throw new IOException("websocket echo " + i + " differs (or none within " + TIMEOUT_S + " s)");
                count("ws_msgs", 1);
                Thread.sleep(10);
            }
            await(w.sendClose(WebSocket.NORMAL_CLOSURE, "bye"), "close");
            count("ws_sessions", 1);
        } finally {
            w.abort();
        }
    }

    interface Task { void run(Random rnd) throws Exception; }

    static Thread loop(String kind, int i, Task task) {
        Thread t = new Thread(() -> {
            Random rnd = new Random(kind.hashCode() * 31L + i);
            while (running) {
                try { task.run(rnd); } catch (Exception e) { error(kind, e); sleepQuietly(100); }
            }
        }, kind + "-" + i);
        t.start();
        return t;
    }

    static void sleepQuietly(long ms) { try { Thread.sleep(ms); } catch (InterruptedException e) { } }

    static String summary(long seconds) {
        StringBuilder sb = new StringBuilder("clients seconds=" + seconds);
        for (String k : List.of("churn_conns", "churn_reqs", "streams", "stream_kb", "uploads", "upload_mb", "ws_sessions", "ws_msgs")) {
            sb.append(' ').append(k).append('=').append(get(k));
        }
        for (String k : List.of("churn", "slow", "upload", "ws")) sb.append(" errors_").append(k).append('=').append(get("errors_" + k));
        return sb.append(" errors=").append(errors.get()).toString();
    }

    public static void main(String[] args) throws Exception {
        port = Integer.parseInt(args[0]);
        long seconds = Long.parseLong(args[1]);
        int churn = args.length > 2 ? Integer.parseInt(args[2]) : 4, slow = args.length > 3 ? Integer.parseInt(args[3]) : 4;
        int uploads = args.length > 4 ? Integer.parseInt(args[4]) : 2, wss = args.length > 5 ? Integer.parseInt(args[5]) : 4;
        streamKb = args.length > 6 ? Integer.parseInt(args[6]) : 4096;
        new Random(42).nextBytes(uploadData);
        for (int mb : new int[] {1, 4, 16}) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(uploadData, 0, mb << 20);
            uploadDigest.put(mb, hex(md.digest()));
        }
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(TIMEOUT_S)).build();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < churn; i++) threads.add(loop("churn", i, SoakClients::churn));
        for (int i = 0; i < slow; i++) threads.add(loop("slow", i, SoakClients::slow));
        for (int i = 0; i < uploads; i++) threads.add(loop("upload", i, rnd -> upload(client, rnd)));
        for (int i = 0; i < wss; i++) threads.add(loop("ws", i, rnd -> ws(client, rnd)));
        long start = System.nanoTime();
        for (long m = 1; m * 60 < seconds; m++) {
            Thread.sleep(Math.max(0, start / 1_000_000 + m * 60_000 - System.nanoTime() / 1_000_000));
            System.out.println(summary(m * 60)); System.out.flush();
        }
        Thread.sleep(Math.max(0, start / 1_000_000 + seconds * 1000 - System.nanoTime() / 1_000_000));
        running = false;
        for (Thread t : threads) t.join(70_000);
        System.out.println(summary(seconds));
        System.exit(0);
    }
}
