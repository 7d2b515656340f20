package seglog.interop;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.server.util.Scheduler;

/**
 * A {@link Scheduler} with no threads: a one-shot task waits in a queue until the
 * caller runs it with {@link #runPending} (the broker's background thread getting to
 * it, at a point of the caller's choosing); a periodic task never runs. Every call on
 * the log's directory then happens on the caller's thread, in program order: the
 * crash workload's trace is one thread's sequence.
 */
final class QueueScheduler implements Scheduler {
    private final ArrayDeque<Named> queue = new ArrayDeque<>();

    private record Named(String name, Runnable task) {}

    @Override
    public void startup() {}

    @Override
    public void shutdown() {}

    @Override
    public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
        if (periodMs <= 0) {
            queue.add(new Named(name, task));
        }
        return new Done();
    }

    @Override
    public void resizeThreadPool(int threads) {}

    /** Runs the queued one-shot tasks (and the ones they queue), in order; their names. */
    List<String> runPending() {
        List<String> ran = new ArrayList<>();
        while (!queue.isEmpty()) {
            Named next = queue.poll();
            next.task().run();
            ran.add(next.name());
        }
        return ran;
    }

    /** The future of a queued task: nothing waits on it. */
    private static final class Done implements ScheduledFuture<Object> {
        @Override
        public long getDelay(TimeUnit unit) {
            return 0;
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(0, other.getDelay(TimeUnit.MILLISECONDS));
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            return false;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public boolean isDone() {
            return true;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }
    }
}
