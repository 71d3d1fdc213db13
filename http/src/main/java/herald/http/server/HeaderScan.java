package herald.http.server;

import clojure.lang.AFn;
import clojure.lang.IKVReduce;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import clojure.lang.Named;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * Encodes a Ring response's {@code :headers} into the head, noting the ones the server handles itself (Date,
 * Server, Connection, Content-Type, Content-Length, Transfer-Encoding). The result for a persistent map is
 * remembered per connection by identity: a handler returning a constant header map pays for it once.
 */
final class HeaderScan extends AFn {
    private static final HeaderScan NONE = new HeaderScan(null);

    private final HeadBuffer head;
    boolean date;
    boolean server;
    boolean close;
    String contentType;
    String contentLength;
    private byte[] encoded;
    private Object source;

    private HeaderScan(HeadBuffer head) {
        this.head = head;
    }

    /** Writes {@code headers} into {@code head}; {@code last} is the connection's previous scan (or null). */
    static HeaderScan write(HeadBuffer head, Object headers, HeaderScan last) {
        if (headers == null) {
            return NONE;
        }
        if (last != null && last.source == headers) {
            head.put(last.encoded);
            return last;
        }
        HeaderScan scan = new HeaderScan(head);
        int start = head.size;
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
        if (headers instanceof IPersistentMap) {
            scan.source = headers;
            scan.encoded = Arrays.copyOfRange(head.bytes, start, head.size);
        }
        return scan;
    }

    @Override
    public Object invoke(Object acc, Object key, Object v) {
        HeaderCache.Name name = HeaderCache.name(name(key));
        if (v instanceof String s) {
            one(name, s);
        } else if (v instanceof Iterable<?> || v instanceof ISeq) {
            for (ISeq s = RT.seq(v); s != null; s = s.next()) {
                one(name, value(name.name, s.first()));
            }
        } else if (v != null) {
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
        head.put(name.prefix);
        head.put(HeaderCache.value(name.name, value));
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
