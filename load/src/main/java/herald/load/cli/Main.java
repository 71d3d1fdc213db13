package herald.load.cli;

import clojure.java.api.Clojure;
import clojure.lang.IFn;

/** Runs {@code herald.load.main/-main} with the command-line arguments (compiled into the standalone jar by build/aot_jar.clj; sources on a plain classpath). */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    // the generator must not pay for leak tracking on its hot path (tests set their own level)
    if (System.getProperty("io.netty.leakDetection.level") == null) {
      System.setProperty("io.netty.leakDetection.level", "disabled");
    }
    IFn require = Clojure.var("clojure.core", "require");
    require.invoke(Clojure.read("herald.load.main"));
    IFn main = Clojure.var("herald.load.main", "-main");
    main.applyTo(clojure.lang.RT.seq(args));
  }
}
