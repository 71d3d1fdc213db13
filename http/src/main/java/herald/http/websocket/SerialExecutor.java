package herald.http.websocket;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/** Runs tasks one at a time, in submission order, on a shared executor. */
final class SerialExecutor implements Executor, Runnable {
    private final Executor base;
    private final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger wip = new AtomicInteger();

    SerialExecutor(Executor base) {
        this.base = base;
    }

    @Override
    public void execute(Runnable task) {
        queue.add(task);
        if (wip.getAndIncrement() == 0) {
            base.execute(this);
        }
    }

    @Override
    public void run() {
        do {
            Runnable r = queue.poll();
            if (r != null) {
                r.run();
            }
        } while (wip.decrementAndGet() != 0);
    }
}
