package herald.load.lab;

/**
 * Allocates MIB mebibytes (default 200) in 256 KiB arrays (below G1's humongous size) and exits: a JVM whose GC log has collections, for the lab's
 * GC log parser test. Usage: java herald.load.lab.Allocate [MIB].
 */
public final class Allocate {
  private Allocate() {}

  /** Allocates and exits, printing a checksum so that the arrays are not optimised away. */
  public static void main(String[] args) {
    int mib = args.length > 0 ? Integer.parseInt(args[0]) : 200;
    long sum = 0;
    for (int i = 0; i < mib * 4; i++) {
      byte[] b = new byte[256 * 1024];
      b[i % b.length] = (byte) i;
      sum += b[i % b.length];
    }
    System.out.println(sum);
  }
}
