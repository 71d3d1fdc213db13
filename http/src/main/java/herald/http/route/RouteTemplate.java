package herald.http.route;

import herald.http.codec.PercentDecoder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A parsed route template: {@code /} followed by segments separated by {@code /}. A segment is static text,
 * a parameter {@code :name} (one whole, non-empty segment; {@code :} or {@code *} elsewhere in a segment is
 * plain text) or, last only, a wildcard {@code *name} (the rest of the
 * path, possibly empty). Names match {@code [A-Za-z_][A-Za-z0-9_-]*} and are unique in a template. Static
 * text may be percent-encoded ({@code /caf%C3%A9} equals {@code /café}). {@code /} alone is the root; a
 * trailing {@code /} is significant ({@code /a} and {@code /a/} are different routes); {@code //} is malformed.
 */
public final class RouteTemplate {
  /** The kind of one segment. */
  public enum Kind { STATIC, PARAM, WILDCARD }

  /** One segment: its kind and its decoded text or parameter name. */
  public record Segment(Kind kind, String text) {}

  private final String template;
  private final List<Segment> segments;

  private RouteTemplate(String template, List<Segment> segments) {
    this.template = template;
    this.segments = segments;
  }

  public String template() {
    return template;
  }

  public List<Segment> segments() {
    return segments;
  }

  /** Parameter and wildcard names in order of appearance. */
  public List<String> paramNames() {
    List<String> names = new ArrayList<>();
    for (Segment s : segments) if (s.kind() != Kind.STATIC) names.add(s.text());
    return names;
  }

  /** Parses {@code t}; throws {@link MalformedRouteException} naming the problem. */
  public static RouteTemplate parse(String t) {
    if (t == null || t.isEmpty() || t.charAt(0) != '/') throw new MalformedRouteException(String.valueOf(t), "must start with '/'");
    if (t.indexOf('?') >= 0 || t.indexOf('#') >= 0) throw new MalformedRouteException(t, "must not contain '?' or '#'");
    List<Segment> segs = new ArrayList<>();
    Set<String> names = new HashSet<>();
    String[] parts = t.substring(1).split("/", -1);
    for (int i = 0; i < parts.length; i++) {
      String p = parts[i];
      if (p.isEmpty() && i < parts.length - 1) throw new MalformedRouteException(t, "empty segment ('//')");
      char c = p.isEmpty() ? 0 : p.charAt(0);
      if (c == ':' || c == '*') {
        String name = p.substring(1);
        if (!validName(name)) {
          throw new MalformedRouteException(t, "parameter segment \"" + p + "\" must be " + c
              + "name with a name matching [A-Za-z_][A-Za-z0-9_-]*");
        }
        if (!names.add(name)) throw new MalformedRouteException(t, "parameter name \"" + name + "\" used twice");
        if (c == '*' && i != parts.length - 1) throw new MalformedRouteException(t, "wildcard \"" + p + "\" must be the last segment");
        segs.add(new Segment(c == ':' ? Kind.PARAM : Kind.WILDCARD, name));
      } else {
        segs.add(new Segment(Kind.STATIC, PercentDecoder.decodePath(p)));
      }
    }
    return new RouteTemplate(t, List.copyOf(segs));
  }

  private static boolean validName(String n) {
    if (n.isEmpty()) return false;
    char c0 = n.charAt(0);
    if (!(Character.isLetter(c0) && c0 < 128) && c0 != '_') return false;
    for (int i = 1; i < n.length(); i++) {
      char c = n.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    }
    return true;
  }

  /** True when the template has no parameter or wildcard. */
  public boolean isStatic() {
    for (Segment s : segments) if (s.kind() != Kind.STATIC) return false;
    return true;
  }
}
