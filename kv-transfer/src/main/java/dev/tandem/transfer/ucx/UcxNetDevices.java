package dev.tandem.transfer.ucx;

import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which network devices an agent's UCX transports may listen on: the one that holds the agent's
 * host address, plus every RDMA device port (RDMA opens no IP listener; leaving it out would cost
 * the fast path). Without it, UCX's tcp transport listens on every interface, wider than the
 * {@code --host} the worker was given. {@code UCX_NET_DEVICES} set by the user wins; a wildcard or
 * non-local host leaves UCX's default.
 */
final class UcxNetDevices {
  private static final Logger log = LoggerFactory.getLogger(UcxNetDevices.class);
  private static final Path INFINIBAND = Path.of("/sys/class/infiniband");

  private UcxNetDevices() {}

  /** UCX settings for an agent reached at {@code host}: {@code NET_DEVICES}, or none. */
  static Map<String, String> forHost(String host) {
    if (System.getenv("UCX_NET_DEVICES") != null) {
      return Map.of();
    }
    NetworkInterface device;
    try {
      InetAddress address = InetAddress.getByName(host);
      if (address.isAnyLocalAddress()) {
        return Map.of();
      }
      device = NetworkInterface.getByInetAddress(address);
    } catch (IOException e) {
      device = null;
    }
    if (device == null) {
      log.warn("UCX: {} is not an address of this host, so UCX's transports listen on every interface; set UCX_NET_DEVICES to narrow them", host);
      return Map.of();
    }
    List<String> devices = new ArrayList<>();
    devices.add(device.getName());
    devices.addAll(rdmaPorts());
    return Map.of("NET_DEVICES", String.join(",", devices));
  }

  /** {@code mlx5_0:1}-style names of this host's RDMA device ports. */
  static List<String> rdmaPorts() {
    if (!Files.isDirectory(INFINIBAND)) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    try (Stream<Path> cards = Files.list(INFINIBAND)) {
      for (Path card : cards.sorted().toList()) {
        Path ports = card.resolve("ports");
        if (Files.isDirectory(ports)) {
          try (Stream<Path> ps = Files.list(ports)) {
            ps.sorted().forEach(p -> out.add(card.getFileName() + ":" + p.getFileName()));
          }
        }
      }
    } catch (IOException e) {
      log.debug("cannot list RDMA devices", e);
    }
    return out;
  }
}
