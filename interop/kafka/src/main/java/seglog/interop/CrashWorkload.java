package seglog.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The harness's {@code crash-workload}: a fixed script of Kafka's own calls on one
 * partition directory {@code PARENT/topic-0}, made to be traced (seglog's Kafka crash
 * recording runs it under strace and cuts the trace at its acknowledgments).
 *
 * <p>The script: appends ({@code appendAsLeader}, the high watermark following the
 * log end, as with caught-up replicas), explicit {@code flush}es, an explicit
 * {@code roll}, one round of Kafka's own {@link Cleaner} ({@code doClean}, whose
 * {@code replaceSegments} swaps the cleaned segment in) on a compacted topic with
 * repeated keys and a tombstone, size retention that deletes the oldest segment
 * ({@code deleteOldSegments} after {@code updateConfig} sets {@code retention.bytes}
 * to the log's size less that segment), more appends, a flush and a broker's close.
 *
 * <p>Determinism: the clock stands still ({@link Main.FixedTime}), the log's
 * scheduler has no threads ({@link QueueScheduler}: a roll's flush and a segment's
 * deferred deletion run when the step that queued them ends), so every call on the
 * directory is the main thread's. After each flush, after retention and at close the
 * two checkpoints a broker's {@code LogManager} keeps in the log directory are
 * written with Kafka's {@link OffsetCheckpointFile}: {@code
 * recovery-point-offset-checkpoint} and {@code log-start-offset-checkpoint}.
 *
 * <p>Each step ends with a marker: a failed {@code access(2)} of {@code
 * PARENT/.seglog-mark-N-WHAT} ({@code Files.exists}), which the trace keeps. The
 * acknowledgment file lists each step: what it was, its marker, the offsets it
 * appended, the recovery point (flushed up to), the log start and end offsets, the
 * tasks the scheduler ran, and for the cleaner round every key's latest value
 * before and after. An append step lists its records (offset, key, value); a step
 * that flushed says up to which offset it acknowledges the log durable ({@code
 * flushed_to}, the log end offset it flushed to); a step that wrote the two
 * checkpoints says so ({@code checkpointed}).
 *
 * <p>The {@code no-flush} variant is the crash explorer's teeth: its flush steps
 * write the checkpoints and acknowledge {@code flushed_to} without calling {@code
 * flush}, so power-loss images after them lose records the workload acknowledged.
 */
final class CrashWorkload {
    private CrashWorkload() {}

    /** Which script runs: Kafka's own, or one that acknowledges a flush it skips. */
    enum Variant {
        NORMAL, NO_FLUSH;

        static Variant of(String name) throws Main.CheckFailed {
            return switch (name) {
                case "normal" -> NORMAL;
                case "no-flush" -> NO_FLUSH;
                default -> throw new Main.CheckFailed("not a crash-workload variant: " + name + " (normal, no-flush)");
            };
        }
    }

    /** The partition the workload writes and {@code crash-load} loads. */
    static final TopicPartition PARTITION = new TopicPartition("topic", 0);

    /** The workload's wall clock (record timestamps sit at it). */
    static final long NOW_MS = 1_700_000_000_000L;

    /** The recovery point checkpoint a broker keeps in the log directory. */
    static final String RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint";

    /** The log start offset checkpoint a broker keeps in the log directory. */
    static final String LOG_START_FILE = "log-start-offset-checkpoint";

    /** The marker files' name prefix. */
    static final String MARK_PREFIX = ".seglog-mark-";

    /** The topic's configuration: small segments, compacted and size-retained. */
    static LogConfig config(long retentionBytes) {
        Map<String, Object> props = new HashMap<>();
        props.put("segment.bytes", 1 << 20);
        props.put("internal.segment.bytes", 250);
        props.put("index.interval.bytes", 128);
        props.put("message.timestamp.type", "CreateTime");
        props.put("compression.type", "producer");
        props.put("cleanup.policy", "compact,delete");
        props.put("retention.bytes", retentionBytes);
        props.put("delete.retention.ms", 86_400_000L);
        // Replaced and retained segments are deleted by the next scheduler run.
        props.put("file.delete.delay.ms", 0);
        return new LogConfig(props);
    }

    /** The log of {@code dir} at the workload's clock, on {@code scheduler}. */
    static UnifiedLog open(File dir, LogConfig config, long logStartOffset, long recoveryPoint,
            QueueScheduler scheduler, boolean hadCleanShutdown) throws Exception {
        return UnifiedLog.create(dir, config, logStartOffset, recoveryPoint, scheduler, new BrokerTopicStats(),
            new Main.FixedTime(NOW_MS), 300000, new ProducerStateManagerConfig(Main.PRODUCER_ID_EXPIRATION_MS, false),
            600000, new LogDirFailureChannel(1), hadCleanShutdown, Optional.<Uuid>empty());
    }

    /** The running script: the log, its directory's parent and the acknowledgments. */
    private static final class Run {
        final File parent;
        final UnifiedLog log;
        final QueueScheduler scheduler;
        final ArrayNode steps;
        final Variant variant;
        int next = 0;

        Run(File parent, UnifiedLog log, QueueScheduler scheduler, ArrayNode steps, Variant variant) {
            this.parent = parent;
            this.log = log;
            this.scheduler = scheduler;
            this.steps = steps;
            this.variant = variant;
        }

        /** Ends a step: runs the queued tasks, records it, and marks it in the trace. */
        ObjectNode ack(String what) throws Exception {
            List<String> ran = scheduler.runPending();
            String marker = MARK_PREFIX + next + "-" + what;
            ObjectNode step = steps.addObject();
            step.put("step", next);
            step.put("what", what);
            step.put("marker", marker);
            step.put("recovery_point", log.recoveryPoint());
            step.put("log_start_offset", log.logStartOffset());
            step.put("log_end_offset", log.logEndOffset());
            ArrayNode tasks = step.putArray("tasks_run");
            ran.forEach(tasks::add);
            ArrayNode segments = step.putArray("segment_bases");
            log.logSegments().forEach(s -> segments.add(s.baseOffset()));
            next += 1;
            // The marker: a failed access(2) the trace keeps.
            Main.check(!Files.exists(new File(parent, marker).toPath()), "a marker file exists: " + marker);
            return step;
        }

        /** Appends one batch of {@code (key, value)} pairs (a null value: a tombstone). */
        void append(String what, String[][] pairs) throws Exception {
            SimpleRecord[] records = new SimpleRecord[pairs.length];
            for (int i = 0; i < pairs.length; i++) {
                byte[] value = pairs[i][1] == null ? null : pairs[i][1].getBytes(StandardCharsets.UTF_8);
                records[i] = new SimpleRecord(NOW_MS, pairs[i][0].getBytes(StandardCharsets.UTF_8), value);
            }
            LogAppendInfo info = log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, records), 0);
            log.updateHighWatermark(log.logEndOffset());
            ObjectNode step = ack(what);
            step.put("first_offset", info.firstOffset());
            step.put("last_offset", info.lastOffset());
            ArrayNode appended = step.putArray("records");
            for (int i = 0; i < pairs.length; i++) {
                ObjectNode r = appended.addObject();
                r.put("offset", info.firstOffset() + i);
                r.put("key", pairs[i][0]);
                r.put("value", pairs[i][1]);
            }
        }

        /** Flushes the whole log and checkpoints it as the log manager does. */
        void flush(String what) throws Exception {
            long flushedTo = log.logEndOffset();
            if (variant != Variant.NO_FLUSH) {
                log.flush(true);
            }
            checkpoint();
            ObjectNode step = ack(what);
            step.put("flushed_to", flushedTo);
            step.put("checkpointed", true);
        }

        /** The log manager's checkpoints of this log's recovery point and start offset. */
        void checkpoint() throws Exception {
            LogDirFailureChannel channel = new LogDirFailureChannel(1);
            new OffsetCheckpointFile(new File(parent, RECOVERY_POINT_FILE), channel)
                .write(Map.of(PARTITION, log.recoveryPoint()));
            new OffsetCheckpointFile(new File(parent, LOG_START_FILE), channel)
                .write(Map.of(PARTITION, log.logStartOffset()));
        }
    }

    /** Runs the script on {@code dir} (PARENT/topic-0, not yet there); the acknowledgments. */
    static ObjectNode run(File dir, Variant variant) throws Exception {
        File parent = dir.getAbsoluteFile().getParentFile();
        Main.check(dir.getName().equals(PARTITION.topic() + "-" + PARTITION.partition()),
            "the workload's directory is " + PARTITION + ": " + dir);
        Main.check(!dir.exists(), "the workload's directory exists already: " + dir);
        Files.createDirectories(parent.toPath());
        ObjectNode out = Main.JSON_MAPPER().createObjectNode();
        out.put("partition_dir", dir.getName());
        out.put("variant", variant == Variant.NO_FLUSH ? "no-flush" : "normal");
        ArrayNode steps = out.putArray("steps");
        QueueScheduler scheduler = new QueueScheduler();
        UnifiedLog log = open(dir, config(-1), 0L, 0L, scheduler, false);
        Run run = new Run(parent, log, scheduler, steps, variant);
        run.ack("open");
        // Segment 0 and its successors: every key twice, some three times.
        for (int round = 0; round < 3; round++) {
            run.append("append", batch(round, 0, 6));
            if (round == 1) {
                run.flush("flush");
            }
        }
        log.roll();
        run.ack("roll");
        run.append("append", new String[][] {{"k1", "v3-1"}, {"k2", null}, {"k3", "v3-3"}});
        run.append("append", new String[][] {{"k0", "v4-0"}, {"k4", "v4-4"}});
        run.flush("flush");
        log.roll();
        run.ack("roll");
        // The cleaner round: everything below the active segment.
        Map<String, String> before = latest(log);
        long firstDirty = log.logStartOffset();
        LogToClean cleanable = new LogToClean(log, firstDirty, log.activeSegment().baseOffset(), false);
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(1 << 20), 1 << 20, 1 << 20, 0.9,
            new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", Time.SYSTEM), Time.SYSTEM, tp -> { });
        long cleanedTo = cleaner.doClean(cleanable, NOW_MS).getKey();
        ObjectNode clean = run.ack("clean");
        clean.put("first_dirty_offset", firstDirty);
        clean.put("cleaned_to_offset", cleanedTo);
        clean.set("latest_before", latestJson(before));
        clean.set("latest_after", latestJson(latest(log)));
        // Size retention that deletes the oldest segment.
        LogSegment oldest = log.logSegments().get(0);
        Main.check(log.logSegments().size() > 2, "retention needs a segment to delete and one to keep");
        log.updateConfig(config(log.size() - oldest.size()));
        int deleted = log.deleteOldSegments();
        run.checkpoint();
        ObjectNode retain = run.ack("retain");
        retain.put("segments_deleted", deleted);
        retain.put("checkpointed", true);
        Main.check(deleted > 0, "retention deleted no segment");
        // More appends after the maintenance, a flush, and a broker's close.
        run.append("append", batch(5, 2, 5));
        run.append("append", batch(6, 0, 2));
        run.flush("flush");
        run.append("append", batch(7, 4, 6));
        long closedAt = log.logEndOffset();
        log.flush(true);
        log.prepareActiveSegmentForClose();
        log.close();
        run.checkpoint();
        ObjectNode close = run.ack("close");
        close.put("flushed_to", closedAt);
        close.put("checkpointed", true);
        return out;
    }

    /** Keys {@code k<from>..k<to - 1>} with values {@code v<round>-<key>}. */
    static String[][] batch(int round, int from, int to) {
        String[][] out = new String[to - from][];
        for (int k = from; k < to; k++) {
            out[k - from] = new String[] {"k" + k, "v" + round + "-" + k};
        }
        return out;
    }

    /** Every key's latest value (null: its latest record is a tombstone). */
    static Map<String, String> latest(UnifiedLog log) throws Exception {
        Map<String, String> out = new TreeMap<>();
        long end = Main.readEach(log, (batch, record) -> {
            if (record.hasKey()) {
                out.put(text(record.key()), record.hasValue() ? text(record.value()) : null);
            }
        });
        Main.check(end >= log.logEndOffset(), "UnifiedLog.read made no progress at " + end);
        return out;
    }

    static ObjectNode latestJson(Map<String, String> latest) {
        ObjectNode out = Main.JSON_MAPPER().createObjectNode();
        latest.forEach(out::put);
        return out;
    }

    static String text(java.nio.ByteBuffer buffer) {
        return new String(Main.bytes(buffer), StandardCharsets.UTF_8);
    }
}
