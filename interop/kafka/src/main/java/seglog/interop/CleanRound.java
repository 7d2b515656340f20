package seglog.interop;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.storage.log.FetchIsolation;
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
 * previous round's end offset, or the log start), {@code now} (the cleaning's clock)
 * and {@code batches} (appended with {@code appendAsLeader} first). The first
 * uncleanable offset is the active segment's base (no compaction lag). The high
 * watermark is set to the log end, as a broker whose replicas caught up has it.
 * Transactions: a later spec field adds them (the differential's hook).
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
        try (Main.Broker broker = new Main.Broker(dir, config(spec), !fresh)) {
            UnifiedLog log = broker.log;
            for (JsonNode batch : spec.get("batches")) {
                log.appendAsLeader(Main.specBatch(batch), 0);
            }
            log.updateHighWatermark(log.logEndOffset());
            long firstDirty = Math.max(spec.get("first_dirty").asLong(), log.logStartOffset());
            long firstUncleanable = log.activeSegment().baseOffset();
            long endOffset = firstDirty;
            if (firstDirty < firstUncleanable) {
                Cleaner cleaner = new Cleaner(0, new SkimpyOffsetMap(16 << 20), 1 << 20, 1 << 20, 0.9,
                    new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", Time.SYSTEM), Time.SYSTEM, tp -> { });
                LogToClean cleanable = new LogToClean(log, firstDirty, firstUncleanable, false);
                Map.Entry<Long, CleanerStats> result = cleaner.doClean(cleanable, spec.get("now").asLong());
                endOffset = result.getKey();
            }
            out.put("first_uncleanable_offset", firstUncleanable);
            out.put("end_offset", endOffset);
            out.put("log_start_offset", log.logStartOffset());
            out.put("log_end_offset", log.logEndOffset());
            ArrayNode segments = out.putArray("segment_bases");
            log.logSegments().forEach(s -> segments.add(s.baseOffset()));
            ArrayNode records = out.putArray("records");
            long next = log.logStartOffset();
            while (next < log.logEndOffset()) {
                FetchDataInfo fetched = log.read(next, 1 << 20, FetchIsolation.LOG_END, true);
                long before = next;
                for (RecordBatch batch : fetched.records.batches()) {
                    for (Record record : batch) {
                        if (record.offset() >= next) {
                            records.add(Main.recordJson(batch, record));
                        }
                    }
                    next = batch.nextOffset();
                }
                Main.check(next > before, "UnifiedLog.read made no progress at " + before);
            }
        }
        return out;
    }
}
