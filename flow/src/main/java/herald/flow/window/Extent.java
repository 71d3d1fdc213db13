package herald.flow.window;

/**
 * One extent of one window for one group on one task thread: its bounds, its aggregation state, which
 * triggers have unfired content (a bit per trigger) and the segment counts of segment triggers.
 * Single-threaded: only the owning task thread reads or writes it.
 */
public final class Extent {
    /** Start of the extent, epoch milliseconds, inclusive. */
    public final long lower;
    /** End of the extent, epoch milliseconds, exclusive. */
    public final long upper;
    /** The group key (null when the task is not grouped). */
    public final Object group;
    /** The aggregation state. */
    public Object state;
    /** Bit i set: trigger i has content it has not fired. */
    public long dirty;
    /** Segments since the last firing, per trigger index (used by segment triggers). */
    public final long[] counts;

    /**
     * A new extent.
     *
     * @param lower start, inclusive
     * @param upper end, exclusive
     * @param group the group key or null
     * @param state the initial aggregation state
     * @param triggers how many triggers the window has
     */
    public Extent(long lower, long upper, Object group, Object state, int triggers) {
        this.lower = lower;
        this.upper = upper;
        this.group = group;
        this.state = state;
        this.counts = new long[triggers];
    }
}
