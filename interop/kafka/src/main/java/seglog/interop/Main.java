package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.OffsetIndex;
import org.apache.kafka.storage.internals.log.OffsetResultHolder;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.TimeIndex;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

/**
 * The seglog interop harness: Apache Kafka's own storage classes on seglog's
 * directories, and directories written by Kafka for seglog.
 *
 * <pre>
 * read  --dir D --out F.json [--lenient-lookups 1]
 *                              open D with FileRecords, OffsetIndex/TimeIndex
 *                              sanityCheck, LogSegment and UnifiedLog (as cleanly
 *                              shut down), check every lookup, write what Kafka read
 * write --parent P --cases none,gzip,... [--segment-bytes N] [--index-interval-bytes N]
 *                              one partition dir P/interop.CASE-0 per case written
 *                              with UnifiedLog.appendAsLeader in two broker sessions,
 *                              closed as a broker closes it, and P/interop.CASE-0.json
 *                              with what Kafka reads back
 * twin  --spec S.json --dir D  the appends and closes of S (seglog's twin run) done
 *                              by Kafka in D, for a byte comparison
 * clean --spec S.json --dir D --out F.json
 *                              one round of the cleaner differential: open D (fresh
 *                              or as cleanly shut down), append S's batches, run
 *                              Kafka's own Cleaner.doClean once from S's first dirty
 *                              offset to the active segment at S's clock, close;
 *                              F: the cleaner's end offset and every record Kafka reads
 *                              (with the transaction view of txnread)
 * txnread --dir D --out F.json Kafka's transaction view of D (a copy opened as cleanly
 *                              shut down): records with producer ids and flags, the
 *                              last stable offset, collectAbortedTransactions (the
 *                              .txnindex files) and the read_committed offsets
 * crash-workload --dir P/topic-0 --out ACKS.json [--variant normal|no-flush]
 *                              CrashWorkload's script of Kafka's own calls on a new
 *                              partition directory (appends, flushes, roll, a Cleaner
 *                              round, retention, close) on one thread, each step
 *                              marked by a failed access of P/.seglog-mark-N-WHAT;
 *                              ACKS: what each step did and acknowledged (no-flush:
 *                              flush steps acknowledge without calling flush)
 * crash-load --list DIRS.txt --out F.json
 *                              CrashLoad: every image directory listed (P holding
 *                              topic-0 and the checkpoints) loaded as after a power
 *                              loss, in one JVM; F: what Kafka serves from each
 * bench                        Kafka's log layer timed on seglog bench's fixtures
 *                              (seglog bench --kafka): commands on stdin, one JSON
 *                              line a reply on stdout (see Bench)
 * </pre>
 *
 * A case is a codec (none, gzip, snappy, lz4, zstd) or "logappendtime" (codec none,
 * message.timestamp.type=LogAppendTime). Exit 0 ok, 1 a check failed (message on
 * stderr), 2 bad usage.
 */
public final class Main {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * {@code read --lenient-lookups 1}: ListOffsets answers are recorded, not checked
     * against a scan. On a compacted log Kafka's own answer can differ from the scan
     * (its cleaned directories do: the cleaner differential compares seglog's
     * answers with Kafka's instead).
     */
    private static boolean lenientLookups = false;

    static ObjectMapper JSON_MAPPER() {
        return JSON;
    }

    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage("no command");
        }
        Map<String, String> flags = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                usage("expected a --flag, got " + args[i]);
            }
            flags.put(args[i].substring(2), args[i + 1]);
        }
        try {
            switch (args[0]) {
                case "read" -> {
                    lenientLookups = flags.containsKey("lenient-lookups");
                    ObjectNode read = read(new File(need(flags, "dir")));
                    JSON.writerWithDefaultPrettyPrinter().writeValue(new File(need(flags, "out")), read);
                }
                case "write" -> write(new File(need(flags, "parent")), need(flags, "cases").split(","),
                    Integer.parseInt(flags.getOrDefault("segment-bytes", "1200")),
                    Integer.parseInt(flags.getOrDefault("index-interval-bytes", "128")));
                case "twin" -> twin(JSON.readTree(new File(need(flags, "spec"))), new File(need(flags, "dir")));
                case "txnread" -> JSON.writerWithDefaultPrettyPrinter().writeValue(new File(need(flags, "out")),
                    CleanRound.txnRead(new File(need(flags, "dir"))));
                case "clean" -> JSON.writerWithDefaultPrettyPrinter().writeValue(new File(need(flags, "out")),
                    CleanRound.run(JSON.readTree(new File(need(flags, "spec"))), new File(need(flags, "dir"))));
                case "crash-workload" -> JSON.writerWithDefaultPrettyPrinter().writeValue(new File(need(flags, "out")),
                    CrashWorkload.run(new File(need(flags, "dir")),
                        CrashWorkload.Variant.of(flags.getOrDefault("variant", "normal"))));
                case "crash-load" -> JSON.writerWithDefaultPrettyPrinter().writeValue(new File(need(flags, "out")),
                    CrashLoad.run(new File(need(flags, "list"))));
                case "bench" -> Bench.serve();
                default -> usage("unknown command " + args[0]);
            }
        } catch (CheckFailed e) {
            System.err.println("kafka interop check failed: " + e.getMessage());
            System.exit(1);
        }
        System.exit(0);
    }

    private static String need(Map<String, String> flags, String name) {
        String value = flags.get(name);
        if (value == null) {
            usage("missing --" + name);
        }
        return value;
    }

    private static void usage(String why) {
        System.err.println("usage: read --dir D --out F | write --parent P --cases C,... | twin --spec S --dir D | clean --spec S --dir D --out F | txnread --dir D --out F | crash-workload --dir P/topic-0 --out F [--variant V] | crash-load --list L --out F | bench (commands on stdin) (" + why + ")");
        System.exit(2);
    }

    /** A check of this harness failed: what Kafka read is not what it should be. */
    static final class CheckFailed extends Exception {
        CheckFailed(String message) {
            super(message);
        }
    }

    static void check(boolean ok, String message) throws CheckFailed {
        if (!ok) {
            throw new CheckFailed(message);
        }
    }

    // ---- Kafka's log, opened and closed as a broker does ----------------------------

    static LogConfig logConfig(int segmentBytes, int indexIntervalBytes, boolean logAppendTime) {
        Map<String, Object> props = new HashMap<>();
        props.put("segment.bytes", 1 << 20);
        props.put("internal.segment.bytes", segmentBytes);
        props.put("index.interval.bytes", indexIntervalBytes);
        props.put("message.timestamp.type", logAppendTime ? "LogAppendTime" : "CreateTime");
        props.put("compression.type", "producer");
        return new LogConfig(props);
    }

    /** Kafka's default {@code producer.id.expiration.ms}: one day. */
    static final int PRODUCER_ID_EXPIRATION_MS = 86400000;

    /**
     * A clock standing at a fixed wall time (a workload's {@code now}), so that what
     * the log does by the clock (producer expiration at load) follows the workload's
     * timestamps; durations still run on the monotonic clock.
     */
    static final class FixedTime implements Time {
        private final long millis;

        FixedTime(long millis) {
            this.millis = millis;
        }

        @Override
        public long milliseconds() {
            return millis;
        }

        @Override
        public long nanoseconds() {
            return System.nanoTime();
        }

        @Override
        public void sleep(long ms) {
            Time.SYSTEM.sleep(ms);
        }
    }

    /** A broker's log manager opening a partition; {@code clean}: .kafka_cleanshutdown was found. */
    static final class Broker implements AutoCloseable {
        final KafkaScheduler scheduler = new KafkaScheduler(1, true, "interop-");
        final UnifiedLog log;

        Broker(File dir, LogConfig config, boolean clean) throws IOException {
            this(dir, config, clean, Time.SYSTEM, PRODUCER_ID_EXPIRATION_MS);
        }

        /** Opened at {@code time} with producers expiring after {@code producerIdExpirationMs}. */
        Broker(File dir, LogConfig config, boolean clean, Time time, int producerIdExpirationMs) throws IOException {
            scheduler.startup();
            log = UnifiedLog.create(dir, config, 0L, 0L, scheduler, new BrokerTopicStats(), time,
                300000, new ProducerStateManagerConfig(producerIdExpirationMs, false), 600000,
                new LogDirFailureChannel(1), clean, Optional.<Uuid>empty());
        }

        /** A clean shutdown (LogManager.shutdown): flush, close-time treatment, close. */
        @Override
        public void close() throws Exception {
            log.flush(true);
            log.prepareActiveSegmentForClose();
            log.close();
            scheduler.shutdown();
        }
    }

    // ---- read: Kafka's classes on a directory ---------------------------------------

    static ObjectNode read(File original) throws Exception {
        ObjectNode out = JSON.createObjectNode();
        ArrayNode segments = out.putArray("segments");
        List<Long> bases = new ArrayList<>();
        Map<Long, List<long[]>> batchesBySegment = new HashMap<>(); // {position, base, last, maxTs}
        try (Stream<Path> files = Files.list(original.toPath())) {
            files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".log")).sorted()
                .forEach(n -> bases.add(Long.parseLong(n.substring(0, n.length() - 4))));
        }
        // FileRecords: every batch valid; the indexes' own sanity checks.
        for (long base : bases) {
            File logFile = new File(original, String.format("%020d.log", base));
            List<long[]> batches = new ArrayList<>();
            try (FileRecords records = FileRecords.open(logFile, false)) {
                int position = 0;
                for (RecordBatch batch : records.batches()) {
                    batch.ensureValid();
                    batches.add(new long[] {position, batch.baseOffset(), batch.lastOffset(), batch.maxTimestamp()});
                    position += batch.sizeInBytes();
                }
                check(position == records.sizeInBytes(), logFile + ": batches end at " + position);
            }
            batchesBySegment.put(base, batches);
            OffsetIndex offsetIndex = new OffsetIndex(new File(original, String.format("%020d.index", base)), base, -1, false);
            offsetIndex.sanityCheck();
            TimeIndex timeIndex = new TimeIndex(new File(original, String.format("%020d.timeindex", base)), base, -1, false);
            timeIndex.sanityCheck();
            long maxTimestamp = batches.stream().mapToLong(b -> b[3]).max().orElse(RecordBatch.NO_TIMESTAMP);
            ObjectNode segment = segments.addObject();
            segment.put("base_offset", base);
            segment.put("batches", batches.size());
            segment.put("offset_index_entries", offsetIndex.entries());
            segment.put("time_index_entries", timeIndex.entries());
            segment.put("max_timestamp", maxTimestamp);
            segment.put("time_index_last_timestamp", timeIndex.lastEntry().timestamp());
            offsetIndex.close();
            timeIndex.close();
        }
        // LogSegment and UnifiedLog on a copy: Kafka's open writes (checkpoints,
        // producer snapshots, preallocation of the active indexes until close).
        Path copy = Files.createTempDirectory("seglog-interop-").resolve(original.getName());
        try {
            copyDir(original.toPath(), copy);
            readCopy(copy, bases, batchesBySegment, out);
        } finally {
            deleteDir(copy.getParent());
        }
        return out;
    }

    /** LogSegment and UnifiedLog (as cleanly shut down) on the copy of a directory. */
    static void readCopy(Path copy, List<Long> bases, Map<Long, List<long[]>> batchesBySegment, ObjectNode out)
            throws Exception {
        LogConfig config = logConfig(1 << 30, 4096, false);
        for (long base : bases) {
            LogSegment segment = LogSegment.open(copy.toFile(), base, config, Time.SYSTEM, false, 0, false, "");
            segment.sanityCheck(false);
            segment.close();
        }
        ArrayNode records = out.putArray("records");
        ArrayNode positions = out.putArray("offset_positions");
        ArrayNode lookups = out.putArray("timestamp_lookups");
        try (Broker broker = new Broker(copy.toFile(), config, true)) {
            UnifiedLog log = broker.log;
            out.put("log_start_offset", log.logStartOffset());
            out.put("log_end_offset", log.logEndOffset());
            // Loaded as cleanly shut down, a segment's max timestamp comes from its time
            // index: it must be the max of its batches.
            for (LogSegment segment : log.logSegments()) {
                long want = batchesBySegment.get(segment.baseOffset()).stream().mapToLong(b -> b[3]).max()
                    .orElse(RecordBatch.NO_TIMESTAMP);
                check(segment.maxTimestampSoFar() == want, "segment " + segment.baseOffset()
                    + ": Kafka reads max timestamp " + segment.maxTimestampSoFar() + " from its time index, the batches have " + want);
            }
            List<long[]> seen = new ArrayList<>(); // {offset, timestamp}
            long end = readEach(log, (batch, record) -> {
                records.add(recordJson(batch, record));
                seen.add(new long[] {record.offset(), record.timestamp()});
            });
            check(end >= log.logEndOffset(), "UnifiedLog.read made no progress at " + end);
            // offset -> position: the batch holding each offset, by Kafka's index lookup.
            for (long[] record : seen) {
                LogSegment segment = log.logSegments().stream().filter(s -> s.baseOffset() <= record[0])
                    .reduce((a, b) -> b).orElseThrow();
                int position = segment.translateOffset(record[0]).position;
                long want = batchesBySegment.get(segment.baseOffset()).stream()
                    .filter(b -> b[1] <= record[0] && record[0] <= b[2]).mapToLong(b -> b[0]).findFirst().orElse(-1);
                check(position == want, "offset " + record[0] + ": Kafka's index lookup gives position " + position + ", the batch is at " + want);
                ObjectNode entry = positions.addObject();
                entry.put("offset", record[0]);
                entry.put("segment", segment.baseOffset());
                entry.put("position", position);
            }
            // timestamp -> offset: ListOffsets for every timestamp seen, one above and
            // one below, against a scan of the records in offset order.
            TreeSet<Long> timestamps = new TreeSet<>();
            for (long[] record : seen) {
                timestamps.add(record[1]);
                timestamps.add(record[1] + 1);
                timestamps.add(Math.max(0, record[1] - 1));
            }
            for (long timestamp : timestamps) {
                OffsetResultHolder holder = log.fetchOffsetByTimestamp(timestamp, Optional.empty());
                long got = holder.timestampAndOffsetOpt().map(t -> t.offset).orElse(-1L);
                long want = seen.stream().filter(r -> r[1] >= timestamp).mapToLong(r -> r[0]).findFirst().orElse(-1);
                check(lenientLookups || got == want, "ListOffsets(" + timestamp + ") = " + got + ", a scan gives " + want);
                ObjectNode entry = lookups.addObject();
                entry.put("timestamp", timestamp);
                entry.put("offset", got);
            }
        }
    }

    /** A record of a whole-log read, with its batch. */
    interface RecordVisitor {
        void visit(RecordBatch batch, Record record) throws Exception;
    }

    /**
     * Every record of {@code log} from its log start offset, in reads of 1 MiB at
     * {@code FetchIsolation.LOG_END}, each handed to {@code visit} once, in order.
     * Returns the log end offset when the reads reach it, or else the offset at which
     * a read found no record (offsets up to the log end that Kafka serves nothing from).
     */
    static long readEach(UnifiedLog log, RecordVisitor visit) throws Exception {
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            FetchDataInfo fetched = log.read(next, 1 << 20, FetchIsolation.LOG_END, true);
            long before = next;
            for (RecordBatch batch : fetched.records.batches()) {
                for (Record record : batch) {
                    if (record.offset() >= next) {
                        visit.visit(batch, record);
                    }
                }
                next = batch.nextOffset();
            }
            if (next == before) {
                return next;
            }
        }
        return Math.max(next, log.logEndOffset());
    }

    static ObjectNode recordJson(RecordBatch batch, Record record) {
        ObjectNode json = JSON.createObjectNode();
        json.put("offset", record.offset());
        json.put("timestamp", record.timestamp());
        json.put("timestamp_type", batch.timestampType().name);
        json.put("compression", batch.compressionType().name);
        json.put("producer_id", batch.producerId());
        json.put("control", batch.isControlBatch());
        json.put("transactional", batch.isTransactional());
        json.put("producer_epoch", batch.producerEpoch());
        if (batch.deleteHorizonMs().isPresent()) {
            json.put("delete_horizon", batch.deleteHorizonMs().getAsLong());
        } else {
            json.putNull("delete_horizon");
        }
        json.put("key", record.hasKey() ? Base64.getEncoder().encodeToString(bytes(record.key())) : null);
        json.put("value", record.hasValue() ? Base64.getEncoder().encodeToString(bytes(record.value())) : null);
        ArrayNode headers = json.putArray("headers");
        for (Header header : record.headers()) {
            ObjectNode h = headers.addObject();
            h.put("key", header.key());
            h.put("value", header.value() == null ? null : Base64.getEncoder().encodeToString(header.value()));
        }
        return json;
    }

    static byte[] bytes(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.duplicate().get(out);
        return out;
    }

    // ---- write: Kafka writes directories for seglog ---------------------------------

    static void write(File parent, String[] cases, int segmentBytes, int indexIntervalBytes) throws Exception {
        for (String name : cases) {
            boolean logAppendTime = name.equals("logappendtime");
            Compression codec = logAppendTime ? Compression.NONE : Compression.of(name).build();
            File dir = new File(parent, "interop." + name + "-0");
            LogConfig config = logConfig(segmentBytes, indexIntervalBytes, logAppendTime);
            int sequence = 0;
            // Session 1: a fresh log, closed as a broker closes it.
            try (Broker broker = new Broker(dir, config, false)) {
                for (int i = 0; i < 24; i++) {
                    broker.log.appendAsLeader(batch(codec, i, 3), 0);
                    if (i == 10) {
                        broker.log.roll();
                    }
                }
                // Appends of two batches, as a follower appends what it fetched (a
                // leader takes one batch per append): Kafka indexes such an append
                // once, by its last offset at its first batch's position.
                for (int i = 50; i < 56; i += 2) {
                    long next = broker.log.logEndOffset();
                    broker.log.appendAsFollower(concat(
                        fetched(codec, next, records(i, 2)),
                        fetched(codec, next + 2, records(i + 1, 3))), 0);
                }
                for (int i = 0; i < 6; i++) {
                    broker.log.appendAsLeader(MemoryRecords.withIdempotentRecords(codec, 4242L, (short) 0, sequence,
                        records(100 + i, 2)), 0);
                    sequence += 2;
                }
            }
            // Session 2: reopened after the clean shutdown, more appends, closed again.
            try (Broker broker = new Broker(dir, config, true)) {
                for (int i = 24; i < 40; i++) {
                    broker.log.appendAsLeader(batch(codec, i, 1 + i % 3), 0);
                }
                broker.log.appendAsLeader(MemoryRecords.withIdempotentRecords(codec, 4242L, (short) 0, sequence,
                    records(200, 3)), 0);
            }
            Files.deleteIfExists(new File(parent, "interop." + name + "-0.json").toPath());
            JSON.writerWithDefaultPrettyPrinter().writeValue(new File(parent, "interop." + name + "-0.json"), read(dir));
        }
    }

    static MemoryRecords concat(MemoryRecords first, MemoryRecords second) {
        ByteBuffer both = ByteBuffer.allocate(first.sizeInBytes() + second.sizeInBytes());
        both.put(first.buffer().duplicate());
        both.put(second.buffer().duplicate());
        both.flip();
        return MemoryRecords.readableRecords(both);
    }

    /** A batch as a follower fetches it: offsets assigned, the leader's epoch stamped. */
    static MemoryRecords fetched(Compression codec, long baseOffset, SimpleRecord[] records) {
        return MemoryRecords.withRecords(RecordBatch.CURRENT_MAGIC_VALUE, baseOffset, codec,
            org.apache.kafka.common.record.TimestampType.CREATE_TIME, RecordBatch.NO_PRODUCER_ID,
            RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, 0, false, records);
    }

    static MemoryRecords batch(Compression codec, int i, int count) {
        return MemoryRecords.withRecords(codec, records(i, count));
    }

    /** Records with keys (one null), values (one tombstone), headers and timestamps out of order. */
    static SimpleRecord[] records(int i, int count) {
        SimpleRecord[] out = new SimpleRecord[count];
        for (int j = 0; j < count; j++) {
            int n = i * 7 + j;
            byte[] key = n % 11 == 5 ? null : ("key-" + (n % 13)).getBytes(StandardCharsets.UTF_8);
            byte[] value = n % 17 == 3 ? null : ("value-" + n + "-" + "x".repeat(n % 23)).getBytes(StandardCharsets.UTF_8);
            Header[] headers = n % 4 == 0
                ? new Header[] {new RecordHeader("h" + n % 3, ("hv" + n).getBytes(StandardCharsets.UTF_8)), new RecordHeader("null", (byte[]) null)}
                : new Header[0];
            long timestamp = 1_700_000_000_000L + (n * 7919L) % 5000;
            out[j] = new SimpleRecord(timestamp, key, value, headers);
        }
        return out;
    }

    // ---- twin: Kafka does what a seglog run did -------------------------------------

    static void twin(JsonNode spec, File dir) throws Exception {
        LogConfig config = logConfig(spec.get("segment_bytes").asInt(), spec.get("index_interval_bytes").asInt(), false);
        boolean clean = false;
        for (JsonNode session : spec.get("sessions")) {
            try (Broker broker = new Broker(dir, config, clean)) {
                for (JsonNode batch : session) {
                    List<SimpleRecord> records = new ArrayList<>();
                    for (JsonNode r : batch) {
                        List<Header> headers = new ArrayList<>();
                        for (JsonNode h : r.get("headers")) {
                            headers.add(new RecordHeader(h.get("key").asText(), unbase64(h.get("value"))));
                        }
                        records.add(new SimpleRecord(r.get("timestamp").asLong(), unbase64(r.get("key")), unbase64(r.get("value")),
                            headers.toArray(new Header[0])));
                    }
                    broker.log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, records.toArray(new SimpleRecord[0])), 0);
                }
            }
            clean = true;
        }
    }

    /** One batch of a twin or clean spec: records with base64 keys, values and headers. */
    static MemoryRecords specBatch(JsonNode batch) {
        return MemoryRecords.withRecords(Compression.NONE, specRecords(batch));
    }

    /** The records of a spec batch. */
    static SimpleRecord[] specRecords(JsonNode batch) {
        List<SimpleRecord> records = new ArrayList<>();
        for (JsonNode r : batch) {
            List<Header> headers = new ArrayList<>();
            for (JsonNode h : r.get("headers")) {
                headers.add(new RecordHeader(h.get("key").asText(), unbase64(h.get("value"))));
            }
            records.add(new SimpleRecord(r.get("timestamp").asLong(), unbase64(r.get("key")), unbase64(r.get("value")),
                headers.toArray(new Header[0])));
        }
        return records.toArray(new SimpleRecord[0]);
    }

    static byte[] unbase64(JsonNode node) {
        return node == null || node.isNull() ? null : Base64.getDecoder().decode(node.asText());
    }

    // ---- files ----------------------------------------------------------------------

    static void copyDir(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                if (Files.isRegularFile(file)) {
                    Files.copy(file, to.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    static void deleteDir(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : (Iterable<Path>) files.sorted((a, b) -> b.compareTo(a))::iterator) {
                Files.delete(file);
            }
        }
    }
}
