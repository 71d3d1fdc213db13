package herald.http.server;

import herald.http.exception.InvalidResponseException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Encoded response header names ("Name: ") and values ("value\r\n"), validated once and cached: handlers
 * return the same header strings over and over, so most responses encode their headers by copying bytes.
 * Bounded: once full, new strings are encoded per use and not cached.
 */
final class HeaderCache {
    static final int OTHER = 0;
    static final int DATE = 1;
    static final int SERVER = 2;
    static final int CONNECTION = 3;
    static final int CONTENT_TYPE = 4;
    static final int CONTENT_LENGTH = 5;
    static final int TRANSFER_ENCODING = 6;

    private static final int MAX_ENTRIES = 4096;
    private static final int MAX_VALUE_LENGTH = 128;
    private static final ConcurrentHashMap<String, Name> NAMES = new ConcurrentHashMap<>();
    private static final ConcurrentHashMap<String, byte[]> VALUES = new ConcurrentHashMap<>();

    private HeaderCache() {}

    /** A header name, its kind and its encoded prefix. */
    static final class Name {
        final String name;
        final int kind;
        final byte[] prefix;

        Name(String name) {
            this.name = name;
            this.kind = kindOf(name);
            this.prefix = (name + ": ").getBytes(StandardCharsets.ISO_8859_1);
        }
    }

    static Name name(String n) {
        Name cached = NAMES.get(n);
        if (cached != null) {
            return cached;
        }
        if (n.isEmpty() || n.indexOf('\n') >= 0 || n.indexOf('\r') >= 0 || n.indexOf(':') >= 0) {
            throw new InvalidResponseException("invalid response header name: " + n);
        }
        Name fresh = new Name(n);
        if (NAMES.size() < MAX_ENTRIES) {
            NAMES.putIfAbsent(n, fresh);
        }
        return fresh;
    }

    /** "value\r\n" in ISO-8859-1, after checking the value holds no CR or LF. */
    static byte[] value(String name, String v) {
        byte[] cached = VALUES.get(v);
        if (cached != null) {
            return cached;
        }
        if (v.indexOf('\n') >= 0 || v.indexOf('\r') >= 0) {
            throw new InvalidResponseException("response header " + name + " contains CR or LF");
        }
        byte[] b = (v + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
        if (v.length() <= MAX_VALUE_LENGTH && VALUES.size() < MAX_ENTRIES) {
            VALUES.putIfAbsent(v, b);
        }
        return b;
    }

    private static int kindOf(String n) {
        switch (n.length()) {
            case 4:
                return n.equalsIgnoreCase("date") ? DATE : OTHER;
            case 6:
                return n.equalsIgnoreCase("server") ? SERVER : OTHER;
            case 10:
                return n.equalsIgnoreCase("connection") ? CONNECTION : OTHER;
            case 12:
                return n.equalsIgnoreCase("content-type") ? CONTENT_TYPE : OTHER;
            case 14:
                return n.equalsIgnoreCase("content-length") ? CONTENT_LENGTH : OTHER;
            case 17:
                return n.equalsIgnoreCase("transfer-encoding") ? TRANSFER_ENCODING : OTHER;
            default:
                return OTHER;
        }
    }
}
