package dev.tandem.router.index;

import dev.tandem.common.WorkerId;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * What the router believes a worker caches when it has no events to go by: the prefixes it sent
 * there, each remembered for a TTL (Dynamo's default: 120 s) and at most {@code maxBlocks} blocks
 * in all (the least recently routed forgotten first).
 *
 * <p>Thread-safe (synchronized; each routing decision records once and looks up once).
 */
public final class ApproximateIndex implements PrefixIndex {
  private final long ttlNanos;
  private final int maxBlocks;
  private final LongSupplier clock;
  private final LinkedHashMap<Long, Map<WorkerId, Long>> expiries = new LinkedHashMap<>(1024, 0.75f, true);
  private final Map<WorkerId, Integer> recordedBlocks = new HashMap<>();

  public ApproximateIndex(long ttlNanos, int maxBlocks, LongSupplier clock) {
    if (ttlNanos <= 0 || maxBlocks <= 0) {
      throw new IllegalArgumentException("TTL and size bound must be positive");
    }
    this.ttlNanos = ttlNanos;
    this.maxBlocks = maxBlocks;
    this.clock = clock;
  }

  /** TTL 120 s; at most 262,144 blocks (about 50 MB at roughly 200 bytes an entry). */
  public static ApproximateIndex withDefaults() {
    return new ApproximateIndex(120L * 1_000_000_000L, 1 << 18, System::nanoTime);
  }

  /** Remembers that {@code worker} was sent (and so will cache) these blocks. */
  public synchronized void record(WorkerId worker, long[] sequenceHashes) {
    long expiry = clock.getAsLong() + ttlNanos;
    for (long h : sequenceHashes) {
      if (expiries.computeIfAbsent(h, k -> new HashMap<>(2)).put(worker, expiry) == null) {
        recordedBlocks.merge(worker, 1, Integer::sum);
      }
    }
    while (expiries.size() > maxBlocks) {
      var it = expiries.entrySet().iterator();
      it.next().getValue().keySet().forEach(w -> recordedBlocks.merge(w, -1, Integer::sum));
      it.remove();
    }
  }

  /** Blocks recorded for {@code worker} and not yet forgotten for size (expired ones included). */
  public synchronized int blockCount(WorkerId worker) {
    return recordedBlocks.getOrDefault(worker, 0);
  }

  /** Forgets a worker. */
  public synchronized void removeWorker(WorkerId worker) {
    expiries.values().removeIf(m -> m.remove(worker) != null && m.isEmpty());
    recordedBlocks.remove(worker);
  }

  @Override
  public synchronized Map<WorkerId, Overlap> overlaps(long[] sequenceHashes) {
    long now = clock.getAsLong();
    Map<WorkerId, Integer> depth = new HashMap<>();
    for (int b = 0; b < sequenceHashes.length; b++) {
      Map<WorkerId, Long> holders = expiries.get(sequenceHashes[b]);
      boolean any = false;
      if (holders != null) {
        for (var e : holders.entrySet()) {
          boolean live = e.getValue() - now > 0;
          if (live && depth.getOrDefault(e.getKey(), 0) == b) {
            depth.put(e.getKey(), b + 1);
            any = true;
          }
        }
      }
      if (!any) {
        break;
      }
    }
    Map<WorkerId, Overlap> out = new HashMap<>();
    depth.forEach((w, d) -> out.put(w, new Overlap(d, 0, 0)));
    return out;
  }

  public synchronized int size() {
    return expiries.size();
  }
}
