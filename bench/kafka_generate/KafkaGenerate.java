import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.metadata.placement.UsableBroker;
import org.apache.kafka.tools.reassign.ReassignPartitionsCommand;

/**
 * What {@code kafka-reassign-partitions.sh --generate} proposes, without a live cluster.
 *
 * <p>In Kafka 4.3.1 {@code --generate} reads the current assignment and the brokers (id, rack) over
 * the admin API, then calls its private {@code ReassignPartitionsCommand.calculateAssignment}, which
 * places every topic afresh with the KRaft controller's {@code StripedReplicaPlacer} (rack-aware,
 * unseeded {@code Random}). This program feeds that same method the data of a snapshot instead of
 * the admin API, so the placement is Kafka's own code, not a re-implementation.
 *
 * <p>Usage: {@code KafkaGenerate INPUT OUTPUT}. INPUT has tab-separated lines
 * {@code broker ID RACK} (the brokers to place onto, as given to {@code --broker-list}) and
 * {@code partition TOPIC PARTITION R1,R2,...} (the current assignment). OUTPUT receives the
 * proposed assignment as Kafka reassignment JSON, exactly as {@code --generate} prints it.
 */
public final class KafkaGenerate {
    private KafkaGenerate() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: KafkaGenerate INPUT OUTPUT");
            System.exit(2);
        }
        List<UsableBroker> brokers = new ArrayList<>();
        Map<TopicPartition, List<Integer>> current = new HashMap<>();
        readInput(Path.of(args[0]), brokers, current);

        long started = System.nanoTime();
        Map<TopicPartition, List<Integer>> proposed = calculateAssignment(current, brokers);
        long placedNanos = System.nanoTime() - started;

        String json = ReassignPartitionsCommand.formatAsReassignmentJson(proposed, Map.of());
        Files.writeString(Path.of(args[1]), json + "\n", StandardCharsets.UTF_8);
        System.err.printf("placed %d partitions on %d brokers in %.3f s%n",
            proposed.size(), brokers.size(), placedNanos / 1e9);
    }

    private static void readInput(
        Path input, List<UsableBroker> brokers, Map<TopicPartition, List<Integer>> current
    ) throws IOException {
        int lineNo = 0;
        for (String line : Files.readAllLines(input, StandardCharsets.UTF_8)) {
            lineNo++;
            String[] f = line.split("\t");
            if (f.length == 3 && f[0].equals("broker")) {
                // As --generate builds them for a rack-aware run: every broker unfenced, with its rack.
                brokers.add(new UsableBroker(Integer.parseInt(f[1]), Optional.of(f[2]), false));
            } else if (f.length == 4 && f[0].equals("partition")) {
                List<Integer> replicas = new ArrayList<>();
                for (String r : f[3].split(",")) {
                    replicas.add(Integer.parseInt(r));
                }
                current.put(new TopicPartition(f[1], Integer.parseInt(f[2])), replicas);
            } else {
                throw new IllegalArgumentException(input + ":" + lineNo + ": unexpected line: " + line);
            }
        }
    }

    /** The command's own private placement step, reached by reflection (the jars are on the class path). */
    @SuppressWarnings("unchecked")
    private static Map<TopicPartition, List<Integer>> calculateAssignment(
        Map<TopicPartition, List<Integer>> current, List<UsableBroker> brokers
    ) throws Exception {
        Method method = ReassignPartitionsCommand.class.getDeclaredMethod(
            "calculateAssignment", Map.class, List.class);
        method.setAccessible(true);
        try {
            return (Map<TopicPartition, List<Integer>>) method.invoke(null, current, brokers);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }
}
