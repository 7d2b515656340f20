package seglog.interop;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The Kafka side of {@code seglog bench --kafka} (the harness's {@code bench}
 * command): Kafka 4.4's own log layer timed on the fixtures of {@code seglog bench},
 * in one long-lived JVM, so that its rounds alternate with seglog's on a warm JIT.
 *
 * <p>Protocol: one command a line on stdin, one JSON object a line on stdout for
 * each (nothing else is printed on stdout). Each command takes at most one argument,
 * the rest of its line:
 *
 * <pre>
 * workdir DIR          the directory the rounds work in (created if missing)
 * prepare-log FILE     FILE holds the log fixture's batches as seglog encodes them
 *                      (its .log bytes); loads them, appends them to a new log
 *                      WORKDIR/read-0 with appendAsLeader and flushes it, kept open
 *                      for the read rounds. Reply {"prepared":"log","batches","records","bytes"}
 * prepare-clean DIR    DIR holds the compaction fixture's .log files as seglog wrote
 *                      them; copies them to WORKDIR/clean-source-0 and opens it once
 *                      (Kafka rebuilds the indexes), closed cleanly.
 *                      Reply {"prepared":"clean","segments"}
 * round append         a new log WORKDIR/append-0: UnifiedLog.create, appendAsLeader of
 *                      every loaded batch (one produce request each), flush and close
 *                      as a broker closes a partition; timed from the create to the
 *                      close; the directory is removed afterwards (untimed)
 * round fetch          UnifiedLog.read of the whole read log in 1 MiB steps
 *                      (FetchIsolation.LOG_END), each step's batch headers read for
 *                      the next offset (a step can end in part of a batch, which the
 *                      next step fetches again); bytes = the whole batches fetched
 * round fetch_records  the same reads, every record of every fetched batch iterated
 *                      with its key and value touched; bytes = key and value bytes
 * round compact        untimed: a copy of clean-source-0 (fsynced), opened as cleanly
 *                      shut down; timed: Kafka's own Cleaner.doClean of every closed
 *                      segment (as LogCleaner constructs it with the broker's
 *                      defaults: a 128 MiB dedupe buffer, 256 KiB I/O buffers);
 *                      records = records the cleaning read, records_kept = written
 * quit                 exits
 * </pre>
 *
 * <p>A round replies {@code {"workload","nanos","records","bytes"}} (compact also
 * {@code records_kept}); {@code nanos} is {@code System.nanoTime} around the timed
 * part only. A command that fails replies {@code {"error": message}}, and the
 * process goes on reading commands.
 */
final class Bench {
    /** Bytes a fetch asks for: seglog's {@code READ_BYTES}. */
    static final int READ_BYTES = 1 << 20;
    /** The broker's default {@code log.cleaner.dedupe.buffer.size} (one cleaner thread). */
    static final int DEDUPE_BUFFER_BYTES = 128 << 20;
    /** The broker's default {@code log.cleaner.io.buffer.size} / threads / 2, as LogCleaner sizes it. */
    static final int IO_BUFFER_BYTES = (512 << 10) / 2;
    /** The broker's default {@code message.max.bytes}: the cleaner's largest I/O buffer. */
    static final int MAX_IO_BUFFER_BYTES = 1048588;
    /** The broker's default {@code log.cleaner.io.buffer.load.factor}. */
    static final double DEDUPE_LOAD_FACTOR = 0.9;
    /** The compaction fixture's segment size (seglog's {@code compaction::SEGMENT_BYTES}). */
    static final int CLEAN_SEGMENT_BYTES = 64 << 20;

    private Path work;
    private final List<ByteBuffer> batches = new ArrayList<>();
    private long batchRecords;
    private long batchBytes;
    private KafkaScheduler readScheduler;
    private UnifiedLog readLog;
    private Path cleanSource;

    private Bench() {}

    /** Serves commands from stdin until {@code quit} or the end of stdin. */
    static void serve() throws Exception {
        Bench bench = new Bench();
        PrintStream out = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            int space = line.indexOf(' ');
            String verb = space < 0 ? line : line.substring(0, space);
            String arg = space < 0 ? "" : line.substring(space + 1);
            if (verb.equals("quit")) {
                break;
            }
            ObjectNode reply;
            try {
                reply = bench.command(verb, arg);
            } catch (Exception e) {
                reply = Main.JSON_MAPPER().createObjectNode();
                reply.put("error", verb + " " + arg + ": " + e);
            }
            out.println(reply.toString());
            out.flush();
        }
        bench.closeReadLog();
    }

    private ObjectNode command(String verb, String arg) throws Exception {
        switch (verb) {
            case "workdir" -> {
                work = Path.of(arg);
                Files.createDirectories(work);
                ObjectNode reply = Main.JSON_MAPPER().createObjectNode();
                reply.put("workdir", work.toString());
                return reply;
            }
            case "prepare-log" -> {
                return prepareLog(Path.of(arg));
            }
            case "prepare-clean" -> {
                return prepareClean(Path.of(arg));
            }
            case "round" -> {
                return switch (arg) {
                    case "append" -> roundAppend();
                    case "fetch" -> roundFetch(false);
                    case "fetch_records" -> roundFetch(true);
                    case "compact" -> roundCompact();
                    default -> throw new IllegalArgumentException("no workload " + arg);
                };
            }
            default -> throw new IllegalArgumentException("unknown command");
        }
    }

    private Path work() {
        if (work == null) {
            throw new IllegalStateException("no workdir yet");
        }
        return work;
    }

    static LogConfig config(int segmentBytes) {
        Map<String, Object> props = new HashMap<>();
        props.put("segment.bytes", segmentBytes);
        props.put("compression.type", "producer");
        props.put("message.timestamp.type", "CreateTime");
        // Old segments a cleaning replaced are deleted at once, not a minute later.
        props.put("file.delete.delay.ms", 0);
        props.put("delete.retention.ms", 0);
        return new LogConfig(props);
    }

    static UnifiedLog open(File dir, LogConfig config, KafkaScheduler scheduler, boolean clean) throws IOException {
        return UnifiedLog.create(dir, config, 0L, 0L, scheduler, new BrokerTopicStats(), Time.SYSTEM,
            300000, new ProducerStateManagerConfig(Main.PRODUCER_ID_EXPIRATION_MS, false), 600000,
            new LogDirFailureChannel(1), clean, Optional.<Uuid>empty());
    }

    /** A clean shutdown of a partition (LogManager.shutdown): flush, close-time treatment, close. */
    static void closeAsBroker(UnifiedLog log) throws IOException {
        log.flush(true);
        log.prepareActiveSegmentForClose();
        log.close();
    }

    static KafkaScheduler scheduler() {
        KafkaScheduler scheduler = new KafkaScheduler(1, true, "bench-");
        scheduler.startup();
        return scheduler;
    }

    // ---- the log fixture: append, fetch, records ----------------------------------

    private ObjectNode prepareLog(Path file) throws Exception {
        ByteBuffer all = ByteBuffer.wrap(Files.readAllBytes(file));
        batches.clear();
        batchRecords = 0;
        batchBytes = all.remaining();
        while (all.remaining() > 0) {
            Main.check(all.remaining() >= 61, file + ": a torn batch header at " + all.position());
            int size = 12 + all.getInt(all.position() + 8);
            Main.check(size >= 61 && size <= all.remaining(), file + ": a batch of " + size + " bytes at " + all.position());
            ByteBuffer batch = all.slice(all.position(), size);
            MemoryRecords records = MemoryRecords.readableRecords(batch.duplicate());
            for (RecordBatch b : records.batches()) {
                b.ensureValid();
                batchRecords += b.countOrNull();
            }
            batches.add(batch);
            all.position(all.position() + size);
        }
        closeReadLog();
        Path dir = work().resolve("read-0");
        deleteTree(dir);
        readScheduler = scheduler();
        readLog = open(dir.toFile(), config(1 << 30), readScheduler, false);
        resetBaseOffsets();
        appendAll(readLog);
        readLog.flush(true);
        Main.check(readLog.logEndOffset() == batchRecords, "the read log ends at " + readLog.logEndOffset());
        ObjectNode reply = Main.JSON_MAPPER().createObjectNode();
        reply.put("prepared", "log");
        reply.put("batches", batches.size());
        reply.put("records", batchRecords);
        reply.put("bytes", batchBytes);
        return reply;
    }

    /**
     * Puts every loaded batch back at base offset 0, as a producer sends it: the
     * leader assigns offsets in place, in the buffer it was given (untimed).
     */
    private void resetBaseOffsets() {
        for (ByteBuffer batch : batches) {
            batch.putLong(0, 0L);
        }
    }

    private void appendAll(UnifiedLog log) throws IOException {
        for (ByteBuffer batch : batches) {
            log.appendAsLeader(MemoryRecords.readableRecords(batch.duplicate()), 0);
        }
    }

    private void closeReadLog() throws Exception {
        if (readLog != null) {
            closeAsBroker(readLog);
            readScheduler.shutdown();
            readLog = null;
        }
    }

    private ObjectNode roundAppend() throws Exception {
        Main.check(!batches.isEmpty(), "no prepare-log yet");
        Path dir = work().resolve("append-0");
        deleteTree(dir);
        KafkaScheduler scheduler = scheduler();
        resetBaseOffsets();
        long start = System.nanoTime();
        UnifiedLog log = open(dir.toFile(), config(1 << 30), scheduler, false);
        appendAll(log);
        closeAsBroker(log);
        long nanos = System.nanoTime() - start;
        long records = log.logEndOffset();
        scheduler.shutdown();
        deleteTree(dir);
        return round("append", nanos, records, batchBytes);
    }

    private ObjectNode roundFetch(boolean records) throws Exception {
        Main.check(readLog != null, "no prepare-log yet");
        UnifiedLog log = readLog;
        long count = 0;
        long bytes = 0;
        long start = System.nanoTime();
        long next = log.logStartOffset();
        long end = log.logEndOffset();
        while (next < end) {
            FetchDataInfo fetched = log.read(next, READ_BYTES, FetchIsolation.LOG_END, true);
            long before = next;
            for (RecordBatch batch : fetched.records.batches()) {
                if (records) {
                    for (Record record : batch) {
                        if (record.offset() >= next) {
                            bytes += (record.hasKey() ? record.key().remaining() : 0)
                                + (record.hasValue() ? record.value().remaining() : 0);
                            count++;
                        }
                    }
                } else {
                    count += batch.lastOffset() + 1 - Math.max(batch.baseOffset(), next);
                    bytes += batch.sizeInBytes();
                }
                next = batch.nextOffset();
            }
            Main.check(next > before, "UnifiedLog.read made no progress at " + before);
        }
        long nanos = System.nanoTime() - start;
        return round(records ? "fetch_records" : "fetch", nanos, count, bytes);
    }

    // ---- the compaction fixture: Kafka's Cleaner -----------------------------------

    private ObjectNode prepareClean(Path fixture) throws Exception {
        Path source = work().resolve("clean-source-0");
        deleteTree(source);
        Files.createDirectories(source);
        int segments = 0;
        try (Stream<Path> files = Files.list(fixture)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                if (file.getFileName().toString().endsWith(".log")) {
                    Files.copy(file, source.resolve(file.getFileName()));
                    segments++;
                }
            }
        }
        // Opened once as after a crash: Kafka recovers every segment and writes its
        // indexes; closed cleanly, so every round opens it as cleanly shut down.
        KafkaScheduler scheduler = scheduler();
        UnifiedLog log = open(source.toFile(), config(CLEAN_SEGMENT_BYTES), scheduler, false);
        closeAsBroker(log);
        scheduler.shutdown();
        cleanSource = source;
        ObjectNode reply = Main.JSON_MAPPER().createObjectNode();
        reply.put("prepared", "clean");
        reply.put("segments", segments);
        return reply;
    }

    private ObjectNode roundCompact() throws Exception {
        Main.check(cleanSource != null, "no prepare-clean yet");
        Path dir = work().resolve("clean-0");
        deleteTree(dir);
        Main.copyDir(cleanSource, dir);
        syncDir(dir);
        KafkaScheduler scheduler = scheduler();
        UnifiedLog log = open(dir.toFile(), config(CLEAN_SEGMENT_BYTES), scheduler, true);
        Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(DEDUPE_BUFFER_BYTES), IO_BUFFER_BYTES,
            MAX_IO_BUFFER_BYTES, DEDUPE_LOAD_FACTOR,
            new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", Time.SYSTEM), Time.SYSTEM, tp -> { });
        LogToClean cleanable = new LogToClean(log, log.logStartOffset(), log.activeSegment().baseOffset(), false);
        long start = System.nanoTime();
        Map.Entry<Long, CleanerStats> result = cleaner.doClean(cleanable, System.currentTimeMillis());
        long nanos = System.nanoTime() - start;
        Main.check(result.getKey() == log.activeSegment().baseOffset(),
            "the cleaning ended at " + result.getKey() + ", not at the active segment");
        CleanerStats stats = result.getValue();
        long read = statsField(stats, "messagesRead");
        long written = statsField(stats, "messagesWritten");
        long bytesRead = statsField(stats, "bytesRead");
        // The replaced segments are deleted on the scheduler: wait for it, then close.
        for (int i = 0; i < 3000 && hasDeleted(dir); i++) {
            Thread.sleep(10);
        }
        log.close();
        scheduler.shutdown();
        deleteTree(dir);
        ObjectNode reply = round("compact", nanos, read, bytesRead);
        reply.put("records_kept", written);
        return reply;
    }

    /** A count of CleanerStats (package-private fields in Kafka 4.4). */
    static long statsField(CleanerStats stats, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field field = CleanerStats.class.getDeclaredField(name);
        field.setAccessible(true);
        return field.getLong(stats);
    }

    static boolean hasDeleted(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.getFileName().toString().endsWith(".deleted"));
        }
    }

    /** fsyncs every file in {@code dir}: a copy's bytes on disk, as seglog's fixture's are. */
    static void syncDir(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    channel.force(true);
                }
            }
        }
    }

    /** Removes {@code dir} and everything in it; nothing if it is not there. */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : (Iterable<Path>) files.sorted((a, b) -> b.compareTo(a))::iterator) {
                try {
                    Files.delete(file);
                } catch (NoSuchFileException e) {
                    // The scheduler deleted it first.
                }
            }
        }
    }

    static ObjectNode round(String workload, long nanos, long records, long bytes) {
        ObjectNode reply = Main.JSON_MAPPER().createObjectNode();
        reply.put("workload", workload);
        reply.put("nanos", nanos);
        reply.put("records", records);
        reply.put("bytes", bytes);
        return reply;
    }
}
