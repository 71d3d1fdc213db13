package herald.http.server;

import clojure.lang.AFn;
import clojure.lang.IKVReduce;
import clojure.lang.IPersistentCollection;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.Keyword;
import clojure.lang.Named;
import clojure.lang.RT;
import clojure.lang.Symbol;
import herald.http.exception.InvalidResponseException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * Encodes a Ring response's {@code :headers} into header lines, noting the ones the server handles itself (Date,
 * Server, Connection, Content-Type and its charset, Content-Length, Transfer-Encoding).
 *
 * <p>The scan of a map that cannot change is remembered per event loop by identity ({@link LoopState#lastScan}):
 * a handler returning a constant header map pays for it once. A map qualifies when it is persistent and every
 * name is a String or keyword and every value a String or a persistent collection of Strings; any other value
 * (a mutable list, an object rendered with {@code toString}) may render differently next time, so such a map is
 * encoded on every response. Immutability is what makes the identity check exact: the same map can only hold
 * the same entries.
 */
final class HeaderScan extends AFn {
    /** The scan of a response without {@code :headers}. */
    static final HeaderScan NONE = new HeaderScan(null);

    /** Where the lines go while scanning (the loop's scratch buffer); null once done. */
    private HeadBuffer out;
    boolean date;
    boolean server;
    boolean close;
    String contentType;
    String contentLength;
    /** The charset of {@code contentType} (UTF-8 when it names none). */
    Charset charset = StandardCharsets.UTF_8;
    /** The encoded lines, {@code bytes[0, size)}: this scan's own copy when remembered, else the loop's scratch. */
    byte[] bytes = new byte[0];
    int size;
    /** The map these lines were encoded from, when it can be reused by identity (immutable); else null. */
    private Object source;
    /** False once a name or value is seen that could render differently next time. */
    private boolean immutable = true;

    private HeaderScan(HeadBuffer out) {
        this.out = out;
    }

    /**
     * The scan of {@code headers}: the remembered one when {@code headers} is the very map it came from, else a
     * fresh scan into {@code loop.scratch} (remembered when the map cannot change). Throws
     * InvalidResponseException for CR/LF in a name or value, a nil value, or an empty name.
     */
    static HeaderScan of(Object headers, LoopState loop) {
        if (headers == null) {
            return NONE;
        }
        HeaderScan last = loop.lastScan;
        if (last != null && last.source == headers) {
            return last;
        }
        HeadBuffer scratch = loop.scratch.reset();
        HeaderScan scan = new HeaderScan(scratch);
        if (headers instanceof IKVReduce kv) {
            kv.kvreduce(scan, null);
        } else {
            Iterable<?> entries = headers instanceof Map<?, ?> m && !(headers instanceof Iterable<?>)
                ? m.entrySet() : (Iterable<?>) headers;
            for (Object o : entries) {
                Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
                scan.invoke(null, e.getKey(), e.getValue());
            }
        }
        scan.out = null;
        scan.charset = Charsets.of(scan.contentType);
        if (scan.immutable && headers instanceof IPersistentMap) {
            scan.bytes = Arrays.copyOf(scratch.bytes, scratch.size);
            scan.size = scratch.size;
            scan.source = headers;
            loop.lastScan = scan;
        } else {
            scan.bytes = scratch.bytes;
            scan.size = scratch.size;
        }
        return scan;
    }

    @Override
    public Object invoke(Object acc, Object key, Object v) {
        if (!(key instanceof String || key instanceof Keyword || key instanceof Symbol)) {
            immutable = false;
        }
        HeaderCache.Name name = HeaderCache.name(name(key));
        if (v instanceof String s) {
            one(name, s);
        } else if (v instanceof Iterable<?> || v instanceof ISeq) {
            if (!(v instanceof IPersistentCollection)) {
                immutable = false;
            }
            for (ISeq s = RT.seq(v); s != null; s = s.next()) {
                Object x = s.first();
                if (!(x instanceof String)) {
                    immutable = false;
                }
                one(name, value(name.name, x));
            }
        } else if (v != null) {
            immutable = false;
            one(name, value(name.name, v));
        }
        return acc;
    }

    private void one(HeaderCache.Name name, String value) {
        switch (name.kind) {
            case HeaderCache.DATE -> date = true;
            case HeaderCache.SERVER -> server = true;
            case HeaderCache.CONTENT_TYPE -> contentType = value;
            case HeaderCache.CONNECTION -> {
                close |= value.toLowerCase(Locale.ROOT).contains("close");
                return;
            }
            case HeaderCache.CONTENT_LENGTH -> {
                contentLength = value.trim();
                return;
            }
            case HeaderCache.TRANSFER_ENCODING -> {
                return;
            }
            default -> { }
        }
        out.put(name.prefix);
        out.put(HeaderCache.value(name.name, value));
    }

    private static String name(Object k) {
        return k instanceof String s ? s : k instanceof Named nm ? nm.getName() : String.valueOf(k);
    }

    private static String value(String name, Object v) {
        if (v == null) {
            throw new InvalidResponseException("response header " + name + " has a nil value");
        }
        return v.toString();
    }
}
