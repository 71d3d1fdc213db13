package herald.http.route;

import java.util.Arrays;

/** One level of the segment trie: static children, at most one param child, terminal routes. */
final class Node {
  private String[] keys = new String[0];
  private int[] hashes = new int[0];
  private Node[] children = new Node[0];
  Node param;
  Route route;
  Route wildcard;

  Node staticChild(String key) {
    for (int i = 0; i < keys.length; i++) if (keys[i].equals(key)) return children[i];
    return null;
  }

  Node addStatic(String key) {
    Node n = staticChild(key);
    if (n != null) return n;
    int len = keys.length;
    keys = Arrays.copyOf(keys, len + 1);
    hashes = Arrays.copyOf(hashes, len + 1);
    children = Arrays.copyOf(children, len + 1);
    keys[len] = key;
    hashes[len] = key.hashCode();
    return children[len] = new Node();
  }

  /** The static child whose key equals {@code path[start, end)} (raw text, without '%'), or null. */
  Node find(String path, int start, int end) {
    if (keys.length == 0) return null;
    int h = 0;
    for (int i = start; i < end; i++) h = 31 * h + path.charAt(i);
    int len = end - start;
    for (int i = 0; i < hashes.length; i++) {
      if (hashes[i] == h) {
        String k = keys[i];
        if (k.length() == len && path.regionMatches(start, k, 0, len)) return children[i];
      }
    }
    return null;
  }

  boolean hasStatic() {
    return keys.length > 0;
  }
}
