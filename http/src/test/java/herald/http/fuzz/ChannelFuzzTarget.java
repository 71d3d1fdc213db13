package herald.http.fuzz;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The base of the fuzz targets that drive a server pipeline on an EmbeddedChannel: what every input needs is loaded
 * before the first one, and after the corpus a collection makes Netty report any leak, which fails the class.
 */
abstract class ChannelFuzzTarget {
    @BeforeAll
    static void warmUp() {
        FuzzChecks.warmUp();
    }

    @AfterAll
    static void noLeaks() throws InterruptedException {
        FuzzChecks.assertNoLeaks();
    }
}
