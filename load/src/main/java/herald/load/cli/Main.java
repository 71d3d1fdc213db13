package herald.load.cli;

import clojure.java.api.Clojure;
import clojure.lang.IFn;

/** Runs {@code herald.load.main/-main} with the command-line arguments (Clojure sources load from the jar). */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    IFn require = Clojure.var("clojure.core", "require");
    require.invoke(Clojure.read("herald.load.main"));
    IFn main = Clojure.var("herald.load.main", "-main");
    main.applyTo(clojure.lang.RT.seq(args));
  }
}
