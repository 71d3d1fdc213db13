package herald.feed;

import clojure.java.api.Clojure;
import clojure.lang.IFn;
import clojure.lang.RT;

/** Entry point of the standalone jar: loads {@code herald.feed.main} (compiled into the standalone jar by build/aot_jar.clj; from source on a plain classpath) and calls its {@code -main}. */
public final class Main {
    private Main() {}

    /**
     * Starts the feed service.
     *
     * @param args command line options, see {@code herald.feed.main/cli-options}
     */
    public static void main(String[] args) {
        IFn require = Clojure.var("clojure.core", "require");
        require.invoke(Clojure.read("herald.feed.main"));
        Clojure.var("herald.feed.main", "-main").applyTo(RT.seq(args));
    }
}
