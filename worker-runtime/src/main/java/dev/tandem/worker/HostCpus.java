package dev.tandem.worker;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where this process computes: host name and allowed CPUs, as workers report them to routers. */
final class HostCpus {
  private HostCpus() {}

  static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown";
    }
  }

  /**
   * The calling thread's CPU affinity ({@code Cpus_allowed_list}, e.g. "0-3,8"); all CPUs if
   * unknown. Threads inherit it from their creator, so the thread that starts a worker speaks for
   * its engine's threads.
   */
  static String allowedCpus() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
        if (line.startsWith("Cpus_allowed_list:")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux: fall through
    }
    return "0-" + (Runtime.getRuntime().availableProcessors() - 1);
  }
}
