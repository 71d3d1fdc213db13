package herald.http.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The jitter probe's counting: which gaps count, into which buckets, and the time they took. */
class MachineJitterTest {
  private static long ms(double v) {
    return (long) (v * 1_000_000);
  }

  @Test
  void gapsAreCountedByLength() {
    MachineJitter.Gaps g = new MachineJitter.Gaps();
    for (long gap : new long[] {50, ms(0.099), ms(0.1), ms(0.5), ms(1), ms(4.9), ms(5), ms(12)}) {
      g.add(gap);
    }
    assertEquals(6, g.over01, "0.1 ms and longer");
    assertEquals(4, g.over1);
    assertEquals(2, g.over5);
    assertEquals(1, g.over10);
    assertEquals(ms(12), g.maxNanos);
    assertEquals(ms(0.1) + ms(0.5) + ms(1) + ms(4.9) + ms(5) + ms(12), g.lostNanos, "only counted gaps are lost time");
  }

  @Test
  void aSpinFindsNoMoreLostTimeThanItRan() {
    long t0 = System.nanoTime();
    MachineJitter.Gaps g = MachineJitter.measure(TimeUnit.MILLISECONDS.toNanos(200));
    long ran = System.nanoTime() - t0;
    assertTrue(ran >= TimeUnit.MILLISECONDS.toNanos(200), "spins the whole time: " + ran);
    assertTrue(g.lostNanos <= ran && g.maxNanos <= g.lostNanos, "lost " + g.lostNanos + " max " + g.maxNanos);
    assertTrue(g.over1 <= g.over01 && g.over5 <= g.over1 && g.over10 <= g.over5, "buckets nest");
  }
}
