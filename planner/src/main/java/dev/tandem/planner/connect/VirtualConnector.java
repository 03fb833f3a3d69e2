package dev.tandem.planner.connect;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.planner.Pool;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.Collection;

/**
 * Acts on nothing: appends each change of a pool's size to a JSON-lines file ({@code time},
 * {@code pool}, {@code replicas}, {@code drain_first}) for another tool to carry out.
 */
public final class VirtualConnector implements Connector {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Path file;

  public VirtualConnector(Path file) {
    this.file = file;
  }

  @Override
  public String name() {
    return "virtual";
  }

  @Override
  public int starting(Pool pool) {
    return 0;
  }

  @Override
  public void scale(Pool pool, int replicas, Collection<String> leastLoaded) throws ConnectorException {
    ObjectNode o = JSON.createObjectNode();
    o.put("time", Instant.now().toString());
    o.put("pool", pool.cliName());
    o.put("replicas", replicas);
    leastLoaded.forEach(o.putArray("drain_first")::add);
    try {
      Files.writeString(file, JSON.writeValueAsString(o) + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new ConnectorException("cannot append to " + file + ": " + e.getMessage(), e);
    }
  }
}
