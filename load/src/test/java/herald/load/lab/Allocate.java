package herald.load.lab;

/**
 * Allocates MIB one-mebibyte arrays (default 200) and exits: a JVM whose GC log has collections, for the lab's
 * GC log parser test. Usage: java herald.load.lab.Allocate [MIB].
 */
public final class Allocate {
  private Allocate() {}

  /** Allocates and exits, printing a checksum so that the arrays are not optimised away. */
  public static void main(String[] args) {
    int mib = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    long sum = 0;
    for (int i = 0; i < mib; i++) {
      byte[] b = new byte[1024 * 1024];
      b[i % b.length] = (byte) i;
      sum += b[i % b.length];
    }
    System.out.println(sum);
  }
}
