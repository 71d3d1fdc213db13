package herald.http.server;

import clojure.lang.APersistentMap;
import clojure.lang.IMapEntry;
import clojure.lang.IObj;
import clojure.lang.IPersistentCollection;
import clojure.lang.IPersistentMap;
import clojure.lang.ISeq;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.Iterator;

/**
 * The Ring {@code :headers} map, built from Netty's headers on first use: a handler that never looks at the
 * headers never pays for lowercasing and joining them. Behaves as the persistent map it realizes to
 * (equality, hashing, printing, assoc all delegate); realization is idempotent, so any thread may trigger it.
 */
final class LazyHeaders extends APersistentMap implements IObj {
    private static final long serialVersionUID = 1L;

    private final transient HttpHeaders headers;
    private volatile IPersistentMap map;

    LazyHeaders(HttpHeaders headers) {
        this.headers = headers;
    }

    IPersistentMap realize() {
        IPersistentMap m = map;
        if (m == null) {
            m = RingRequest.headersMap(headers);
            map = m;
        }
        return m;
    }

    @Override
    public IPersistentMap assoc(Object key, Object val) {
        return realize().assoc(key, val);
    }

    @Override
    public IPersistentMap assocEx(Object key, Object val) {
        return realize().assocEx(key, val);
    }

    @Override
    public IPersistentMap without(Object key) {
        return realize().without(key);
    }

    @Override
    public Iterator iterator() {
        return realize().iterator();
    }

    @Override
    public boolean containsKey(Object key) {
        return realize().containsKey(key);
    }

    @Override
    public IMapEntry entryAt(Object key) {
        return realize().entryAt(key);
    }

    @Override
    public int count() {
        return realize().count();
    }

    @Override
    public IPersistentCollection empty() {
        return realize().empty();
    }

    @Override
    public ISeq seq() {
        return realize().seq();
    }

    @Override
    public Object valAt(Object key) {
        return realize().valAt(key);
    }

    @Override
    public Object valAt(Object key, Object notFound) {
        return realize().valAt(key, notFound);
    }

    @Override
    public IPersistentMap meta() {
        return null;
    }

    @Override
    public IObj withMeta(IPersistentMap meta) {
        return ((IObj) realize()).withMeta(meta);
    }
}
