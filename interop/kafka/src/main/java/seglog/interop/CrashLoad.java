package seglog.interop;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.UnifiedLog;

/**
 * The harness's {@code crash-load}: one JVM loads many crash images of the crash
 * workload's directory, each as a broker starting after a power loss loads it, and
 * says what Kafka serves from each.
 *
 * <p>Each line of the list is an image: a log directory (PARENT) holding {@code
 * topic-0} and the log manager's checkpoints. The recovery point and the log start
 * offset come from the image's checkpoints as {@code LogManager.loadLogs} takes them
 * (a checkpoint that is missing or does not read gives 0, as the log manager's reset
 * does), and {@code UnifiedLog.create} loads the partition with {@code
 * hadCleanShutdown=false} (no clean shutdown file: a power loss). The image is a
 * scratch copy: loading recovers it in place.
 *
 * <p>Per image: {@code absent} (no partition directory), or {@code error} (the load
 * or the read threw: class and message), or the log start and end offsets, the
 * recovery point after loading, every segment's base and next offset, and every
 * record (offset, key and value as text, null for none) read from the log start on;
 * when a read from an offset below the log end returns no record (a hole up to
 * the log end, which Kafka serves nothing from), {@code read_ends_at} says where. An image that fails does
 * not stop the others.
 */
final class CrashLoad {
    private CrashLoad() {}

    static ObjectNode run(File list) throws Exception {
        ObjectNode out = Main.JSON_MAPPER().createObjectNode();
        ArrayNode images = out.putArray("images");
        List<String> dirs = Files.readAllLines(list.toPath(), StandardCharsets.UTF_8);
        for (String line : dirs) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode image = images.addObject();
            image.put("dir", line);
            try {
                load(new File(line), image);
            } catch (Throwable e) {
                ObjectNode error = image.putObject("error");
                error.put("class", e.getClass().getName());
                error.put("message", String.valueOf(e.getMessage()));
            }
        }
        return out;
    }

    /** A checkpoint's offset of the workload's partition, as the log manager reads it. */
    static long checkpointed(File parent, String name, ObjectNode image) {
        File file = new File(parent, name);
        if (!file.exists()) {
            image.putNull(name);
            return 0L;
        }
        try {
            Map<org.apache.kafka.common.TopicPartition, Long> read =
                new OffsetCheckpointFile(file, new LogDirFailureChannel(1)).read();
            long offset = read.getOrDefault(CrashWorkload.PARTITION, 0L);
            image.put(name, offset);
            return offset;
        } catch (Exception e) {
            image.put(name, "unreadable: " + e.getClass().getName());
            return 0L;
        }
    }

    static void load(File parent, ObjectNode image) throws Exception {
        File dir = new File(parent, CrashWorkload.PARTITION.topic() + "-" + CrashWorkload.PARTITION.partition());
        if (!dir.isDirectory()) {
            image.put("absent", true);
            return;
        }
        long recoveryPoint = checkpointed(parent, CrashWorkload.RECOVERY_POINT_FILE, image);
        long logStart = checkpointed(parent, CrashWorkload.LOG_START_FILE, image);
        UnifiedLog log = CrashWorkload.open(dir, CrashWorkload.config(-1), logStart, recoveryPoint,
            new QueueScheduler(), false);
        try {
            image.put("log_start_offset", log.logStartOffset());
            image.put("log_end_offset", log.logEndOffset());
            image.put("recovery_point", log.recoveryPoint());
            ArrayNode segments = image.putArray("segments");
            for (LogSegment segment : log.logSegments()) {
                ObjectNode s = segments.addObject();
                s.put("base_offset", segment.baseOffset());
                s.put("next_offset", segment.readNextOffset());
            }
            ArrayNode records = image.putArray("records");
            long end = Main.readEach(log, (batch, record) -> {
                ObjectNode r = records.addObject();
                r.put("offset", record.offset());
                r.put("key", record.hasKey() ? CrashWorkload.text(record.key()) : null);
                r.put("value", record.hasValue() ? CrashWorkload.text(record.value()) : null);
            });
            if (end < log.logEndOffset()) {
                // No record at or after `end`: Kafka's read skips empty segments, so the
                // offsets up to the log end are a hole it serves nothing from.
                image.put("read_ends_at", end);
            }
        } finally {
            log.close();
        }
    }
}
