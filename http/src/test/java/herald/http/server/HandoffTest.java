package herald.http.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** The hand-off of one event-loop pass's units to virtual threads: batching, blocked units, order. */
class HandoffTest {
    private EventLoopGroup group;
    private EventLoop loop;
    private Handoff handoff;

    @BeforeEach
    void start() {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        loop = group.next();
        handoff = new Handoff(loop, Thread.ofVirtual().factory(), null);
    }

    @AfterEach
    void stop() {
        group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).syncUninterruptibly();
    }

    /** Submits {@code units} from inside one event-loop task: one pass. */
    private void onePass(List<Runnable> units) {
        loop.submit(() -> units.forEach(handoff::submit)).syncUninterruptibly();
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 7, 19})
    void aBlockedUnitHoldsUpNoOtherOfItsPass(int blocker) throws Exception {
        int n = 20;
        CountDownLatch othersDone = new CountDownLatch(n - 1);
        CountDownLatch released = new CountDownLatch(1);
        List<Runnable> units = new CopyOnWriteArrayList<>();
        for (int i = 0; i < n; i++) {
            units.add(i == blocker ? () -> {
                try {
                    if (othersDone.await(5, TimeUnit.SECONDS)) {
                        released.countDown();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            } : othersDone::countDown);
        }
        onePass(units);
        assertTrue(othersDone.await(5, TimeUnit.SECONDS), "the units around the blocked one ran");
        assertTrue(released.await(5, TimeUnit.SECONDS), "the blocked unit went on once they had");
    }

    @Test
    void unitsThatDoNotBlockShareAFewThreadsAndRunInOrderOnEach() throws Exception {
        int n = 200;
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        ConcurrentHashMap<Thread, List<Integer>> perThread = new ConcurrentHashMap<>();
        CountDownLatch done = new CountDownLatch(n);
        List<Runnable> units = new CopyOnWriteArrayList<>();
        for (int i = 0; i < n; i++) {
            int k = i;
            units.add(() -> {
                Thread t = Thread.currentThread();
                assertTrue(t.isVirtual());
                threads.add(t);
                perThread.computeIfAbsent(t, x -> new CopyOnWriteArrayList<>()).add(k);
                done.countDown();
            });
        }
        onePass(units);
        assertTrue(done.await(5, TimeUnit.SECONDS));
        assertTrue(threads.size() <= 1 + Runtime.getRuntime().availableProcessors() * 2,
            "a pass of " + n + " units ran on " + threads.size() + " threads");
        for (List<Integer> ks : perThread.values()) {
            for (int i = 1; i < ks.size(); i++) {
                assertTrue(ks.get(i - 1) < ks.get(i), "each thread takes the units in order: " + ks);
            }
        }
        assertEquals(n, perThread.values().stream().mapToInt(List::size).sum());
    }

    @Test
    void aHandlersInterruptDoesNotReachTheNextUnit() throws Exception {
        CountDownLatch done = new CountDownLatch(2);
        boolean[] interruptedSecond = {true};
        onePass(List.of(() -> {
            Thread.currentThread().interrupt();
            done.countDown();
        }, () -> {
            interruptedSecond[0] = Thread.currentThread().isInterrupted();
            done.countDown();
        }));
        assertTrue(done.await(5, TimeUnit.SECONDS));
        assertEquals(false, interruptedSecond[0]);
    }
}
