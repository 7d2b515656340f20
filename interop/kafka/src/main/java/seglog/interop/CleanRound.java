package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.AbortedTxn;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.common.TransactionVersion;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.internals.log.Cleaner;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;

/**
 * One round of the cleaner differential (the harness's {@code clean} command):
 * Kafka 4.4's own {@link Cleaner}, constructed standalone as {@code LogCleaner}
 * constructs it, cleaning a {@link UnifiedLog} once with {@code doClean}.
 *
 * <p>Spec: {@code segment_bytes}, {@code index_interval_bytes},
 * {@code delete_retention_ms}, {@code fresh} (no log yet), {@code first_dirty} (the
 * previous round's end offset, or the log start), {@code now} (the cleaning's clock,
 * and the log's: it opens at {@code now}, so its producer state expires what Kafka
 * would at that time), {@code producer_id_expiration_ms} (absent: a day) and
 * {@code batches} (appended with {@code appendAsLeader} first). The first
 * uncleanable offset is the active segment's base (no compaction lag). The high
 * watermark is set to the log end, as a broker whose replicas caught up has it.
 *
 * <p>Transactions: a batch of {@code batches} is either an array of records (a plain
 * batch), or an object: {@code {"producer_id", "epoch", "sequence", "records"}} a
 * transactional batch ({@code MemoryRecords.withTransactionalRecords}, appended by
 * the leader: the producer state manager checks epoch and sequence; transaction
 * verification is off in {@link Main.Broker}), or {@code {"marker": "commit"|"abort",
 * "producer_id", "epoch", "timestamp"}} an end-transaction marker
 * ({@code MemoryRecords.withEndTransactionMarker}, coordinator epoch 0 as seglog's
 * {@code append_control} writes, appended with origin COORDINATOR as the broker's
 * WriteTxnMarkers handler does). The first uncleanable offset is then also held
 * at the last stable offset ({@code LogCleanerManager.cleanableOffsets}), which
 * {@code LogToClean} rounds down to the base of the segment holding it.
 */
final class CleanRound {
    private CleanRound() {}

    static LogConfig config(JsonNode spec) {
        Map<String, Object> props = new HashMap<>();
        props.put("segment.bytes", 1 << 20);
        props.put("internal.segment.bytes", spec.get("segment_bytes").asInt());
        props.put("index.interval.bytes", spec.get("index_interval_bytes").asInt());
        props.put("message.timestamp.type", "CreateTime");
        props.put("compression.type", "producer");
        props.put("delete.retention.ms", spec.get("delete_retention_ms").asLong());
        // Replaced segments are deleted at once, not a minute later.
        props.put("file.delete.delay.ms", 0);
        // cleanup.policy stays `delete`: a compacted topic refuses keyless appends,
        // and keyless records are part of what the cleaner is checked on.
        return new LogConfig(props);
    }

    static ObjectNode run(JsonNode spec, File dir) throws Exception {
        ObjectNode out = Main.JSON_MAPPER().createObjectNode();
        boolean fresh = spec.get("fresh").asBoolean();
        // The log opens at the cleaning's clock, so that it expires the producers
        // Kafka would at that time (producer.id.expiration.ms, at load).
        long now = spec.get("now").asLong();
        int expiration = spec.has("producer_id_expiration_ms")
            ? spec.get("producer_id_expiration_ms").asInt() : Main.PRODUCER_ID_EXPIRATION_MS;
        try (Main.Broker broker = new Main.Broker(dir, config(spec), !fresh, new Main.FixedTime(now), expiration)) {
            UnifiedLog log = broker.log;
            for (JsonNode batch : spec.get("batches")) {
                append(log, batch);
            }
            log.updateHighWatermark(log.logEndOffset());
            long firstDirty = Math.max(spec.get("first_dirty").asLong(), log.logStartOffset());
            // LogToClean rounds the first uncleanable offset down to the base of the
            // segment holding it; a broker cleans only a log with something below it.
            LogToClean cleanable = new LogToClean(log, firstDirty,
                Math.max(firstDirty, Math.min(log.activeSegment().baseOffset(), log.lastStableOffset())), false);
            long firstUncleanable = cleanable.firstUncleanableOffset();
            long endOffset = firstDirty;
            if (firstDirty < firstUncleanable) {
                Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(16 << 20), 1 << 20, 1 << 20, 0.9,
                    new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", Time.SYSTEM), Time.SYSTEM, tp -> { });
                Map.Entry<Long, CleanerStats> result = cleaner.doClean(cleanable, now);
                endOffset = result.getKey();
            }
            out.put("first_uncleanable_offset", firstUncleanable);
            out.put("end_offset", endOffset);
            out.put("log_start_offset", log.logStartOffset());
            out.put("log_end_offset", log.logEndOffset());
            ArrayNode segments = out.putArray("segment_bases");
            log.logSegments().forEach(s -> segments.add(s.baseOffset()));
            readAll(log, out);
        }
        return out;
    }

    /** Appends one spec batch: plain, transactional or a marker. */
    static void append(UnifiedLog log, JsonNode batch) throws Exception {
        if (batch.isArray()) {
            log.appendAsLeader(Main.specBatch(batch), 0);
            return;
        }
        long producerId = batch.get("producer_id").asLong();
        short epoch = (short) batch.get("epoch").asInt();
        if (batch.has("marker")) {
            ControlRecordType type = batch.get("marker").asText().equals("abort")
                ? ControlRecordType.ABORT : ControlRecordType.COMMIT;
            MemoryRecords marker = MemoryRecords.withEndTransactionMarker(log.logEndOffset(),
                batch.get("timestamp").asLong(), 0, producerId, epoch, new EndTransactionMarker(type, 0));
            // Transaction version 0: the classic protocol (no epoch bump at the marker).
            log.appendAsLeader(marker, 0, AppendOrigin.COORDINATOR, RequestLocal.noCaching(),
                VerificationGuard.SENTINEL, TransactionVersion.TV_0.featureLevel());
            return;
        }
        SimpleRecord[] records = Main.specRecords(batch.get("records"));
        log.appendAsLeader(MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, epoch,
            batch.get("sequence").asInt(), records), 0);
    }

    /**
     * Everything a reader needs of {@code log} (its high watermark at the log end):
     * {@code records} (every stored record with its batch's producer id and flags),
     * {@code last_stable_offset}, {@code aborted} (Kafka's
     * {@code collectAbortedTransactions} over the whole log, from the
     * {@code .txnindex} files) and {@code committed} (the offsets a
     * {@code read_committed} consumer returns: fetched at {@code TXN_COMMITTED} with
     * the fetch's aborted transactions, filtered as the consumer's
     * {@code CompletedFetch} does).
     */
    static void readAll(UnifiedLog log, ObjectNode out) throws Exception {
        ArrayNode records = out.putArray("records");
        long end = Main.readEach(log, (batch, record) -> records.add(Main.recordJson(batch, record)));
        Main.check(end >= log.logEndOffset(), "UnifiedLog.read made no progress at " + end);
        out.put("last_stable_offset", log.lastStableOffset());
        ArrayNode aborted = out.putArray("aborted");
        for (AbortedTxn txn : log.collectAbortedTransactions(log.logStartOffset(), log.logEndOffset())) {
            ObjectNode entry = aborted.addObject();
            entry.put("producer_id", txn.producerId());
            entry.put("first_offset", txn.firstOffset());
            entry.put("last_offset", txn.lastOffset());
            entry.put("last_stable_offset", txn.lastStableOffset());
        }
        ArrayNode committed = out.putArray("committed");
        // The consumer's CompletedFetch: aborted transactions by first offset; a
        // producer is in an aborted transaction from its first offset to its ABORT.
        java.util.PriorityQueue<long[]> pending = new java.util.PriorityQueue<>((a, b) -> Long.compare(a[1], b[1]));
        java.util.Set<Long> abortedProducers = new java.util.HashSet<>();
        java.util.Set<String> seenTxns = new java.util.HashSet<>();
        long next = log.logStartOffset();
        long lso = log.lastStableOffset();
        while (next < lso) {
            FetchDataInfo fetched = log.read(next, 1 << 20, FetchIsolation.TXN_COMMITTED, true);
            long before = next;
            fetched.abortedTransactions.ifPresent(list -> list.forEach(t -> {
                if (seenTxns.add(t.producerId() + "@" + t.firstOffset())) {
                    pending.add(new long[] {t.producerId(), t.firstOffset()});
                }
            }));
            for (RecordBatch batch : fetched.records.batches()) {
                while (!pending.isEmpty() && pending.peek()[1] <= batch.lastOffset()) {
                    abortedProducers.add(pending.poll()[0]);
                }
                if (batch.isControlBatch()) {
                    Record marker = batch.iterator().next();
                    if (ControlRecordType.parse(marker.key()) == ControlRecordType.ABORT) {
                        abortedProducers.remove(batch.producerId());
                    }
                } else if (!(batch.isTransactional() && abortedProducers.contains(batch.producerId()))) {
                    for (Record record : batch) {
                        if (record.offset() >= next) {
                            committed.add(record.offset());
                        }
                    }
                }
                next = batch.nextOffset();
            }
            if (next == before) {
                break;
            }
        }
    }

    /**
     * The harness's {@code txnread}: {@link #readAll} on a copy of {@code dir},
     * opened as cleanly shut down (as {@code read} opens seglog's directories).
     * seglog writes no producer snapshots ({@code .snapshot}): Kafka opening a
     * cleanly shut down directory without them takes empty producer state, so an
     * open transaction is not open for it (its last stable offset is the log end).
     */
    static ObjectNode txnRead(File dir) throws Exception {
        ObjectNode out = Main.JSON_MAPPER().createObjectNode();
        java.nio.file.Path copy = java.nio.file.Files.createTempDirectory("seglog-txnread-").resolve(dir.getName());
        try {
            Main.copyDir(dir.toPath(), copy);
            try (Main.Broker broker = new Main.Broker(copy.toFile(), Main.logConfig(1 << 30, 4096, false), true)) {
                broker.log.updateHighWatermark(broker.log.logEndOffset());
                readAll(broker.log, out);
            }
        } finally {
            Main.deleteDir(copy.getParent());
        }
        return out;
    }
}
