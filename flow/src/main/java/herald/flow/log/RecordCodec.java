package herald.flow.log;

import clojure.java.api.Clojure;
import clojure.lang.IFn;
import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentSet;
import clojure.lang.IPersistentVector;
import clojure.lang.Keyword;
import clojure.lang.LazilyPersistentVector;
import clojure.lang.PersistentHashSet;
import clojure.lang.PersistentList;
import clojure.lang.RT;
import clojure.lang.Symbol;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Date;
import java.util.Map;
import java.util.UUID;

/**
 * Encodes log records (Clojure data) to bytes and back: nil, booleans, integers (as longs), doubles,
 * strings, keywords, symbols, maps, vectors, sets, lists and seqs, java.util.Date, UUID and byte arrays in a compact
 * tagged binary form; anything else (ratios, big numbers, characters, tagged values) as its EDN text.
 * Records come back as plain maps; metadata is not kept. Stateless and thread-safe.
 */
public final class RecordCodec {
    /** First byte of a binary payload; a payload starting with anything else is EDN text. */
    public static final byte BINARY_V1 = (byte) 0xB1;

    private static final byte NIL = 0, TRUE = 1, FALSE = 2, LONG = 3, DOUBLE = 4, STRING = 5, KEYWORD = 6,
            MAP = 7, VECTOR = 8, SET = 9, LIST = 10, INST = 11, UUID_T = 12, SYMBOL = 13, EDN = 14, BYTES = 15;

    private static final IFn PR_STR = Clojure.var("clojure.core", "pr-str");
    private static volatile IFn readString;

    private RecordCodec() {
    }

    private static IFn reader() {
        IFn r = readString;
        if (r == null) {
            Clojure.var("clojure.core", "require").invoke(Clojure.read("clojure.edn"));
            IFn read = Clojure.var("clojure.edn", "read-string");
            Object opts = RT.map(Keyword.intern("default"), Clojure.var("clojure.core", "tagged-literal"));
            r = new clojure.lang.AFn() {
                @Override
                public Object invoke(Object s) {
                    return read.invoke(opts, s);
                }
            };
            readString = r;
        }
        return r;
    }

    /** A growable byte buffer. */
    private static final class Out {
        byte[] b = new byte[128];
        int n;

        void ensure(int more) {
            if (n + more > b.length) {
                b = Arrays.copyOf(b, Math.max(b.length * 2, n + more));
            }
        }

        void put(byte x) {
            ensure(1);
            b[n++] = x;
        }

        void putInt(int x) {
            ensure(4);
            b[n++] = (byte) (x >>> 24);
            b[n++] = (byte) (x >>> 16);
            b[n++] = (byte) (x >>> 8);
            b[n++] = (byte) x;
        }

        void putLong(long x) {
            putInt((int) (x >>> 32));
            putInt((int) x);
        }

        void putString(String s) {
            putBytes(s.getBytes(StandardCharsets.UTF_8));
        }

        void putBytes(byte[] u) {
            putInt(u.length);
            ensure(u.length);
            System.arraycopy(u, 0, b, n, u.length);
            n += u.length;
        }
    }

    /** A cursor over encoded bytes. */
    private static final class In {
        final byte[] b;
        int i;

        In(byte[] b, int i) {
            this.b = b;
            this.i = i;
        }

        int getInt() {
            int x = ((b[i] & 0xff) << 24) | ((b[i + 1] & 0xff) << 16) | ((b[i + 2] & 0xff) << 8) | (b[i + 3] & 0xff);
            i += 4;
            return x;
        }

        long getLong() {
            long hi = getInt();
            return (hi << 32) | (getInt() & 0xffffffffL);
        }

        byte[] getBytes() {
            int len = getInt();
            byte[] out = Arrays.copyOfRange(b, i, i + len);
            i += len;
            return out;
        }

        String getString() {
            int len = getInt();
            String s = new String(b, i, len, StandardCharsets.UTF_8);
            i += len;
            return s;
        }
    }

    /**
     * The bytes of a record.
     *
     * @param x the record
     * @return its encoding, starting with {@link #BINARY_V1}
     */
    public static byte[] encode(Object x) {
        Out o = new Out();
        o.put(BINARY_V1);
        write(o, x);
        return Arrays.copyOf(o.b, o.n);
    }

    private static void write(Out o, Object x) {
        if (x == null) {
            o.put(NIL);
        } else if (x instanceof Boolean bool) {
            o.put(bool ? TRUE : FALSE);
        } else if (x instanceof Long || x instanceof Integer || x instanceof Short || x instanceof Byte) {
            o.put(LONG);
            o.putLong(((Number) x).longValue());
        } else if (x instanceof Double || x instanceof Float) {
            o.put(DOUBLE);
            o.putLong(Double.doubleToRawLongBits(((Number) x).doubleValue()));
        } else if (x instanceof String s) {
            o.put(STRING);
            o.putString(s);
        } else if (x instanceof Keyword k) {
            o.put(KEYWORD);
            o.putString(k.sym.toString());
        } else if (x instanceof Symbol s) {
            o.put(SYMBOL);
            o.putString(s.toString());
        } else if (x instanceof IPersistentMap m) {
            writeMap(o, m);
        } else if (x instanceof IPersistentVector v) {
            o.put(VECTOR);
            writeAll(o, (Collection<?>) v);
        } else if (x instanceof IPersistentSet s) {
            o.put(SET);
            writeAll(o, (Collection<?>) s);
        } else if (x instanceof clojure.lang.ISeq || x instanceof clojure.lang.IPersistentList) {
            o.put(LIST);
            ArrayList<Object> items = new ArrayList<>();
            for (Object s = RT.seq(x); s != null; s = RT.next(s)) {
                items.add(RT.first(s));
            }
            writeAll(o, items);
        } else if (x instanceof Date d) {
            o.put(INST);
            o.putLong(d.getTime());
        } else if (x instanceof byte[] bytes) {
            o.put(BYTES);
            o.putBytes(bytes);
        } else if (x instanceof UUID u) {
            o.put(UUID_T);
            o.putLong(u.getMostSignificantBits());
            o.putLong(u.getLeastSignificantBits());
        } else {
            o.put(EDN);
            o.putString((String) PR_STR.invoke(x));
        }
    }

    private static void writeMap(Out o, IPersistentMap m) {
        o.put(MAP);
        o.putInt(m.count());
        for (Object e : (Iterable<?>) m) {
            Map.Entry<?, ?> en = (Map.Entry<?, ?>) e;
            write(o, en.getKey());
            write(o, en.getValue());
        }
    }

    private static void writeAll(Out o, Collection<?> c) {
        o.putInt(c.size());
        for (Object y : c) {
            write(o, y);
        }
    }

    /**
     * The record a payload holds: binary ({@link #BINARY_V1} first) or EDN text.
     *
     * @param b the payload
     * @return the record
     */
    public static Object decode(byte[] b) {
        if (b.length > 0 && b[0] == BINARY_V1) {
            return read(new In(b, 1));
        }
        return reader().invoke(new String(b, StandardCharsets.UTF_8));
    }

    private static Object read(In in) {
        byte tag = in.b[in.i++];
        switch (tag) {
            case NIL: return null;
            case TRUE: return Boolean.TRUE;
            case FALSE: return Boolean.FALSE;
            case LONG: return in.getLong();
            case DOUBLE: return Double.longBitsToDouble(in.getLong());
            case STRING: return in.getString();
            case KEYWORD: return Keyword.intern(in.getString());
            case SYMBOL: return Symbol.intern(in.getString());
            case MAP: {
                int n = in.getInt();
                Object[] kvs = new Object[2 * n];
                for (int j = 0; j < 2 * n; j++) {
                    kvs[j] = read(in);
                }
                return RT.mapUniqueKeys(kvs);
            }
            case VECTOR: return LazilyPersistentVector.createOwning(readAll(in));
            case SET: return PersistentHashSet.create(readAll(in));
            case LIST: return PersistentList.create(Arrays.asList(readAll(in)));
            case INST: return new Date(in.getLong());
            case UUID_T: return new UUID(in.getLong(), in.getLong());
            case BYTES: return in.getBytes();
            case EDN: return reader().invoke(in.getString());
            default: throw new IllegalArgumentException("Unknown record tag " + tag + " at byte " + (in.i - 1));
        }
    }

    private static Object[] readAll(In in) {
        int n = in.getInt();
        Object[] xs = new Object[n];
        for (int j = 0; j < n; j++) {
            xs[j] = read(in);
        }
        return xs;
    }
}
