package dev.tandem.router.index;

import dev.tandem.common.KvEvent;
import dev.tandem.common.WorkerId;
import it.unimi.dsi.fastutil.ints.Int2IntOpenHashMap;
import it.unimi.dsi.fastutil.ints.IntArrayList;
import it.unimi.dsi.fastutil.longs.LongArrayList;
import it.unimi.dsi.fastutil.objects.Object2IntOpenHashMap;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.StampedLock;

/**
 * The router's index of cached KV blocks, a hash table (not a radix tree): sequence hash → the
 * workers holding that block, with the tier. A sequence hash stands for its whole prefix (it
 * chains every earlier block), so the prefix tree is implicit: a request matches a worker for as
 * many leading blocks as the worker holds without a gap. Stored, removed and cleared events apply
 * in event order per worker.
 *
 * <p><b>Layout.</b> One open-addressing table (linear probing) of three longs a slot: the key, an
 * entry, and the entry's parent hash. A block one worker holds is that one slot: the entry packs
 * the worker, its tier and how many of that worker's entries name this block as their parent. A
 * block two workers hold with the same parent — a disaggregated prompt's blocks, in its prefill
 * worker's cache and its decode worker's — packs both into the entry (a <em>pair</em>, while each
 * one's fields fit in half). A block more workers hold points to a side record ({@link Holders}). No
 * per-worker hash set: each worker keeps an append-only log of the hashes it stored, read only
 * when it is cleared or leaves, and compacted when it grows to twice what the worker holds.
 *
 * <p><b>Lookups jump.</b> When a worker's cache is prefix-closed — every block it holds has its
 * parent there too — holding block {@code k} of a prompt means holding blocks {@code 0..k}, so a
 * lookup probes every {@value #JUMP}th block and finds where a worker stops by binary search
 * (O(D / J + log J) probes for a match of D blocks, not D). The index knows which workers are
 * prefix-closed: a removed block that the worker still holds children of, and a parent a stored
 * event names but the worker never stored, stay as <em>ghost</em> entries (not held, counted per
 * worker) until their last child goes. A worker with ghosts, or with blocks off device (whose tiers
 * a jump would skip), is walked block by block. Both ways give the same overlap.
 *
 * <p>Counted, not only logged: stored events whose parent the worker was not known to hold, and
 * removals of blocks the worker was not known to hold.
 *
 * <p><b>Threading.</b> Events apply under an exclusive lock (one event stream per worker, any
 * number of workers). Lookups run beside them without blocking them: a lookup reads optimistically
 * and keeps its answer only if no event was applied meanwhile, else it retries, and after two
 * tries takes the lock's shared mode. So a lookup sees the index as it stood between two events —
 * it never counts a block no worker held at that moment, nor misses one that every event so far
 * left in place. Per-worker block counts ({@link #blockCount(WorkerId)}) are read without the lock.
 */
public final class BlockHashIndex implements PrefixIndex {
  /** Blocks a lookup skips per probe over a prefix-closed worker. */
  static final int JUMP = 32;

  private static final int DEVICE = 0;
  private static final int GHOST = 3;
  private static final int ABSENT = -1;
  private static final float MAX_LOAD = 0.7f;

  private final StampedLock lock = new StampedLock();
  /** Replaced whole when it grows; a replaced table is never written again (readers may hold it). */
  private volatile Table table = new Table(1 << 12);
  private int slotsUsed;
  private Holders[] holders = new Holders[64];
  private final IntArrayList freeHolders = new IntArrayList();
  private int holdersUsed;

  /** Worker → its index (from 1; 0 is no worker). */
  private final Object2IntOpenHashMap<WorkerId> workerIndex = new Object2IntOpenHashMap<>();
  /** Per worker (index from 1): its id, blocks held, ghost entries, blocks held off device, stored-hash log. */
  private WorkerId[] workers = new WorkerId[16];
  private int[] held = new int[16];
  private int[] ghosts = new int[16];
  private int[] offDevice = new int[16];
  /** Stored events without a parent whose first block is not a prompt's first (its parent unknown, so no ghost). */
  private int[] unrooted = new int[16];
  private LongArrayList[] logs = new LongArrayList[16];
  /** Per worker (index from 1): its entry of {@link #counts}, so that an event updates it without a map lookup. */
  private AtomicInteger[] countOf = new AtomicInteger[16];
  private int workerCount;
  /** The worker of the last event and its index: a worker's events tend to come together. */
  private WorkerId lastWorker;
  private int lastIndex;
  /** Each worker's block count, readable without the lock (a routing decision reads one per candidate). */
  private final Map<WorkerId, AtomicInteger> counts = new ConcurrentHashMap<>();

  private final AtomicLong unknownParents = new AtomicLong();
  private final AtomicLong unknownRemovals = new AtomicLong();
  private final AtomicLong eventsApplied = new AtomicLong();
  /** Written by the event thread, read nowhere: keeps the prefetching loads of {@link #touch} alive. */
  private long touched;

  /** The slots: {@code [key, entry, parent]} each; entry 0 is an empty slot. */
  private static final class Table {
    final long[] slots;
    final int mask;
    final int shift;

    Table(int capacity) {
      slots = new long[capacity * 3];
      mask = capacity - 1;
      shift = 64 - Integer.numberOfTrailingZeros(capacity);
    }

    int capacity() {
      return mask + 1;
    }

    /**
     * The top bits of the mixed key: a table twice the size puts each entry at about twice its old
     * position, so that growing copies nearly in order instead of scattering writes.
     */
    int home(long key) {
      return (int) ((key * 0x9E3779B97F4A7C15L) >>> shift);
    }

    /** The slot holding {@code key}, or {@code -(1 + the empty slot ending its probe run)}. */
    int findOrEmpty(long key) {
      for (int i = home(key); ; i = (i + 1) & mask) {
        if (slots[3 * i + 1] == 0) {
          return -1 - i;
        }
        if (slots[3 * i] == key) {
          return i;
        }
      }
    }

    /** The slot holding {@code key}, or -1. */
    int find(long key) {
      int cap = mask + 1;
      for (int i = home(key), probes = 0; probes < cap; i = (i + 1) & mask, probes++) {
        long entry = slots[3 * i + 1];
        if (entry == 0) {
          return -1;
        }
        if (slots[3 * i] == key) {
          return i;
        }
      }
      return -1;
    }
  }

  // Entry of a block one worker holds: bits 0-1 state (tier ordinal, or GHOST), 2-31 worker index
  // (from 1, so that an entry is never 0), 32 whether the parent is known, 33-61 children (up to
  // 2^29 - 1, more blocks than a worker's cache holds). With bit 62 set it is a pair: two halves of
  // 31 bits (0-30, 31-61), each bits 0-1 state, 2 whether the parent is known, 3-18 worker index,
  // 19-30 children, sharing the slot's parent hash. A negative entry is -(1 + index) of a Holders
  // record.
  private static final long PAIR = 1L << 62;
  private static final int HALF_BITS = 31;
  private static final int HALF_MAX_WORKER = 0xFFFF;
  private static final int HALF_MAX_CHILDREN = 0xFFF;

  private static long single(int worker, int state, boolean hasParent, int children) {
    return ((long) children << 33) | (hasParent ? 1L << 32 : 0) | ((long) worker << 2) | state;
  }

  private static int workerOf(long entry) {
    return (int) (entry >>> 2) & 0x3FFF_FFFF;
  }

  private static int stateOf(long entry) {
    return (int) entry & 3;
  }

  private static boolean hasParent(long entry) {
    return (entry & (1L << 32)) != 0;
  }

  private static int childrenOf(long entry) {
    return (int) (entry >>> 33) & 0x1FFF_FFFF;
  }

  private static boolean isPair(long entry) {
    return (entry & PAIR) != 0;
  }

  /** Half {@code h} (0 or 1) of a pair entry. */
  private static long half(long entry, int h) {
    return (entry >>> (HALF_BITS * h)) & ((1L << HALF_BITS) - 1);
  }

  private static long packHalf(int worker, int state, boolean hasParent, int children) {
    return ((long) children << 19) | ((long) worker << 3) | (hasParent ? 4 : 0) | state;
  }

  private static int halfWorker(long half) {
    return (int) (half >>> 3) & HALF_MAX_WORKER;
  }

  private static int halfState(long half) {
    return (int) half & 3;
  }

  private static boolean halfHasParent(long half) {
    return (half & 4) != 0;
  }

  private static int halfChildren(long half) {
    return (int) (half >>> 19) & HALF_MAX_CHILDREN;
  }

  private static long pair(long half0, long half1) {
    return PAIR | (half1 << HALF_BITS) | half0;
  }

  /** Whether a single entry's fields fit in half a pair. */
  private static boolean fitsHalf(int worker, int children) {
    return worker <= HALF_MAX_WORKER && children <= HALF_MAX_CHILDREN;
  }

  /**
   * The workers holding one block when there are several, with each one's state, children and
   * parent. Many holders (a shared system prompt across a big fleet) also get a worker → position
   * table, so that finding, adding and removing one stays O(1).
   */
  private static final class Holders {
    /** From this many holders a map; below it a scan of the workers (one cache line), which is faster than the map's lookups. */
    private static final int TABLE_FROM = 16;
    int[] workers = new int[4];
    byte[] states = new byte[4];
    int[] children = new int[4];
    long[] parents = new long[4];
    boolean[] hasParent = new boolean[4];
    int size;
    Int2IntOpenHashMap slots;

    int indexOf(int w) {
      if (slots != null) {
        return slots.get(w);
      }
      for (int i = 0; i < size; i++) {
        if (workers[i] == w) {
          return i;
        }
      }
      return -1;
    }

    void add(int w, int state, boolean knownParent, long parent, int childCount) {
      if (size == workers.length) {
        int n = size * 2;
        workers = Arrays.copyOf(workers, n);
        states = Arrays.copyOf(states, n);
        children = Arrays.copyOf(children, n);
        parents = Arrays.copyOf(parents, n);
        hasParent = Arrays.copyOf(hasParent, n);
      }
      workers[size] = w;
      states[size] = (byte) state;
      children[size] = childCount;
      parents[size] = parent;
      hasParent[size] = knownParent;
      if (slots != null) {
        slots.put(w, size);
      } else if (size + 1 >= TABLE_FROM) {
        slots = new Int2IntOpenHashMap(2 * TABLE_FROM);
        slots.defaultReturnValue(-1);
        for (int j = 0; j <= size; j++) {
          slots.put(workers[j], j);
        }
      }
      size++;
    }

    void removeAt(int i) {
      int w = workers[i];
      size--;
      workers[i] = workers[size];
      states[i] = states[size];
      children[i] = children[size];
      parents[i] = parents[size];
      hasParent[i] = hasParent[size];
      if (slots != null) {
        slots.remove(w);
        if (i < size) {
          slots.put(workers[i], i);
        }
      }
    }
  }

  private int indexOf(WorkerId worker) {
    if (worker == lastWorker) {
      return lastIndex;
    }
    int i = workerIndex.getInt(worker);
    if (i != 0) {
      lastWorker = worker;
      lastIndex = i;
      return i;
    }
    int n = ++workerCount;
    if (n == workers.length) {
      int len = n * 2;
      workers = Arrays.copyOf(workers, len);
      held = Arrays.copyOf(held, len);
      ghosts = Arrays.copyOf(ghosts, len);
      offDevice = Arrays.copyOf(offDevice, len);
      unrooted = Arrays.copyOf(unrooted, len);
      logs = Arrays.copyOf(logs, len);
      countOf = Arrays.copyOf(countOf, len);
    }
    workers[n] = worker;
    logs[n] = new LongArrayList();
    countOf[n] = new AtomicInteger();
    counts.put(worker, countOf[n]);
    workerIndex.put(worker, n);
    return n;
  }

  /** Applies one event of {@code worker}'s stream. */
  public void apply(WorkerId worker, KvEvent event) {
    long stamp = lock.writeLock();
    try {
      eventsApplied.incrementAndGet();
      int w = indexOf(worker);
      switch (event) {
        case KvEvent.Stored s -> store(w, s);
        case KvEvent.Removed r -> {
          for (long h : r.sequenceHashes()) {
            remove(w, h);
          }
        }
        case KvEvent.Cleared c -> dropWorker(w);
      }
      compactLogIfLarge(w);
      countOf[w].set(held[w]);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  private void store(int w, KvEvent.Stored event) {
    int state = event.tier().ordinal();
    List<KvEvent.StoredBlock> blocks = event.blocks();
    touch(blocks);
    boolean knownParent = event.parentHash().isPresent();
    long parent = knownParent ? event.parentHash().getAsLong() : 0;
    if (knownParent) {
      long at = locate(parent, w);
      if (at == NOWHERE || stateAt(at) == GHOST) {
        unknownParents.incrementAndGet();
      }
      if (at == NOWHERE) { // a ghost, so that the worker counts as not prefix-closed while its children live
        addEntry(parent, w, GHOST, false, 0);
        ghosts[w]++;
        logs[w].add(parent);
      }
    } else if (!blocks.isEmpty() && blocks.get(0).sequenceHash() != blocks.get(0).localHash()) {
      unrooted[w]++; // a prompt's first block hashes to its local hash (BlockHasher.chainAll)
    }
    int parentSlot = -1; // where the previous block went, while that stays true
    for (int i = 0, n = blocks.size(); i < n; i++) {
      long hash = blocks.get(i).sequenceHash();
      Table t = table;
      int found = t.findOrEmpty(hash);
      if (found < 0 && slotsUsed + 1 <= MAX_LOAD * t.capacity()) { // a block nobody holds: most of them
        int slot = -1 - found;
        t.slots[3 * slot] = hash;
        t.slots[3 * slot + 2] = parent;
        t.slots[3 * slot + 1] = single(w, state, knownParent, 0);
        slotsUsed++;
        held[w]++;
        if (state != DEVICE) {
          offDevice[w]++;
        }
        logs[w].add(hash);
        if (knownParent) {
          long p = parentSlot >= 0 ? t.slots[3 * parentSlot + 1] : 0;
          if (p > 0 && !isPair(p) && t.slots[3 * parentSlot] == parent && workerOf(p) == w) {
            t.slots[3 * parentSlot + 1] = p + (1L << 33);
          } else {
            addChildren(locate(parent, w), 1);
          }
        }
        parentSlot = slot;
        parent = hash;
        knownParent = true;
        continue;
      }
      parentSlot = -1;
      long at = found < 0 ? NOWHERE : locateIn(t, found, w);
      if (at == NOWHERE) {
        addEntry(hash, w, state, knownParent, parent);
        held[w]++;
        if (state != DEVICE) {
          offDevice[w]++;
        }
        logs[w].add(hash);
        if (knownParent) {
          addChildren(locate(parent, w), 1);
        }
      } else {
        int was = stateAt(at);
        if (was == GHOST) {
          ghosts[w]--;
          held[w]++;
        } else if (was != DEVICE) {
          offDevice[w]--;
        }
        if (state != DEVICE) {
          offDevice[w]++;
        }
        setState(at, state);
        if (was == GHOST && knownParent && !hasParentAt(at)) { // a ghost made for a parent learns its own
          setParent(at, parent);
          addChildren(locate(parent, w), 1);
        }
      }
      parent = hash;
      knownParent = true;
    }
  }

  /**
   * Loads the home slot of every block of an event before any is written: the loads miss the
   * cache independently and overlap, where the inserts would take their misses one after another.
   */
  private void touch(List<KvEvent.StoredBlock> blocks) {
    Table t = table;
    long sum = 0;
    for (int i = 0, n = blocks.size(); i < n; i++) {
      sum += t.slots[3 * t.home(blocks.get(i).sequenceHash()) + 1];
    }
    touched += sum;
  }

  private void remove(int w, long hash) {
    long at = locate(hash, w);
    int state = at == NOWHERE ? ABSENT : stateAt(at);
    if (state == ABSENT || state == GHOST) {
      unknownRemovals.incrementAndGet();
      return;
    }
    held[w]--;
    if (state != DEVICE) {
      offDevice[w]--;
    }
    if (childrenAt(at) > 0) { // a later block of the worker's still names it: a hole
      setState(at, GHOST);
      ghosts[w]++;
      return;
    }
    // Gone; release its parent, which goes too if it was a ghost this was the last child of.
    while (true) {
      boolean knownParent = hasParentAt(at);
      long parent = parentAt(at);
      deleteEntry(at);
      if (!knownParent) {
        return;
      }
      at = locate(parent, w);
      if (at == NOWHERE || addChildren(at, -1) > 0 || stateAt(at) != GHOST) {
        return;
      }
      ghosts[w]--;
    }
  }

  /** Forgets everything a worker held (it left, or its stream restarts from a snapshot). */
  public void removeWorker(WorkerId worker) {
    long stamp = lock.writeLock();
    try {
      int w = workerIndex.getInt(worker);
      if (w != 0) {
        dropWorker(w);
        counts.get(worker).set(0);
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  private void dropWorker(int w) {
    LongArrayList log = logs[w];
    for (int i = 0, n = log.size(); i < n; i++) {
      long at = locate(log.getLong(i), w);
      if (at != NOWHERE) {
        deleteEntry(at);
      }
    }
    logs[w] = new LongArrayList();
    held[w] = 0;
    ghosts[w] = 0;
    offDevice[w] = 0;
    unrooted[w] = 0;
  }

  /** Keeps a worker's log within twice its entries: drops hashes it no longer holds and duplicates. */
  private void compactLogIfLarge(int w) {
    LongArrayList log = logs[w];
    if (log.size() <= 2 * (held[w] + ghosts[w]) + 1024) {
      return;
    }
    long[] kept = new long[held[w] + ghosts[w]];
    int n = 0;
    for (int i = 0, size = log.size(); i < size; i++) {
      long hash = log.getLong(i);
      if (locate(hash, w) != NOWHERE) {
        if (n == kept.length) {
          kept = Arrays.copyOf(kept, n * 2 + 1);
        }
        kept[n++] = hash;
      }
    }
    Arrays.sort(kept, 0, n);
    int unique = 0;
    for (int i = 0; i < n; i++) {
      if (i == 0 || kept[i] != kept[i - 1]) {
        kept[unique++] = kept[i];
      }
    }
    logs[w] = LongArrayList.wrap(kept, unique);
  }

  // --- Entries (under the write lock) ---------------------------------------------------------
  //
  // A locator names one worker's entry for one block, found once per operation: the slot in the
  // upper 32 bits, the position in its Holders record in the lower (SINGLE, or HALF0 and HALF0 - 1
  // for a pair's halves). It stays valid until the next entry is added or deleted.

  private static final long NOWHERE = -1;
  /** Positions of the slot's own entry: a single one, and the halves of a pair (-2 - half). */
  private static final int SINGLE = -1;
  private static final int HALF0 = -2;

  private static long locator(int slot, int position) {
    return ((long) slot << 32) | (position & 0xFFFF_FFFFL);
  }

  private static int slotOf(long at) {
    return (int) (at >>> 32);
  }

  private static int positionOf(long at) {
    return (int) at;
  }

  /** {@code w}'s entry for {@code hash}, or NOWHERE. */
  private long locate(long hash, int w) {
    Table t = table;
    int slot = t.find(hash);
    return slot < 0 ? NOWHERE : locateIn(t, slot, w);
  }

  private long locateIn(Table t, int slot, int w) {
    long entry = t.slots[3 * slot + 1];
    if (entry > 0) {
      if (!isPair(entry)) {
        return workerOf(entry) == w ? locator(slot, SINGLE) : NOWHERE;
      }
      for (int h = 0; h < 2; h++) {
        if (halfWorker(half(entry, h)) == w) {
          return locator(slot, HALF0 - h);
        }
      }
      return NOWHERE;
    }
    int i = holdersOf(entry).indexOf(w);
    return i < 0 ? NOWHERE : locator(slot, i);
  }

  private Holders holdersAt(long at) {
    return holdersOf(table.slots[3 * slotOf(at) + 1]);
  }

  private long entryAt(long at) {
    return table.slots[3 * slotOf(at) + 1];
  }

  /** Which half of a pair the locator names (0 or 1), or -1 for a single entry or a record's. */
  private static int halfOf(long at) {
    int position = positionOf(at);
    return position <= HALF0 ? HALF0 - position : -1;
  }

  /** A tier ordinal, or GHOST. */
  private int stateAt(long at) {
    int position = positionOf(at);
    if (position == SINGLE) {
      return stateOf(entryAt(at));
    }
    return position < 0 ? halfState(half(entryAt(at), halfOf(at))) : holdersAt(at).states[position];
  }

  private int childrenAt(long at) {
    int position = positionOf(at);
    if (position == SINGLE) {
      return childrenOf(entryAt(at));
    }
    return position < 0 ? halfChildren(half(entryAt(at), halfOf(at))) : holdersAt(at).children[position];
  }

  private boolean hasParentAt(long at) {
    int position = positionOf(at);
    if (position == SINGLE) {
      return hasParent(entryAt(at));
    }
    return position < 0 ? halfHasParent(half(entryAt(at), halfOf(at))) : holdersAt(at).hasParent[position];
  }

  private long parentAt(long at) {
    return positionOf(at) < 0 ? table.slots[3 * slotOf(at) + 2] : holdersAt(at).parents[positionOf(at)];
  }

  /** Replaces half {@code h} of the pair at {@code slot}. */
  private void setHalf(int slot, int h, long value) {
    long[] s = table.slots;
    int shift = HALF_BITS * h;
    s[3 * slot + 1] = (s[3 * slot + 1] & ~(((1L << HALF_BITS) - 1) << shift)) | (value << shift);
  }

  private Holders holdersOf(long entry) {
    return holders[(int) (-entry - 1)];
  }

  private void setState(long at, int state) {
    if (positionOf(at) == SINGLE) {
      table.slots[3 * slotOf(at) + 1] = (entryAt(at) & ~3L) | state;
    } else if (positionOf(at) < 0) {
      int h = halfOf(at);
      setHalf(slotOf(at), h, (half(entryAt(at), h) & ~3L) | state);
    } else {
      holdersAt(at).states[positionOf(at)] = (byte) state;
    }
  }

  /** Gives the entry a known parent; may move a pair into a record (so {@code at} is spent). */
  private void setParent(long at, long parent) {
    int slot = slotOf(at);
    if (positionOf(at) == SINGLE) {
      table.slots[3 * slot + 2] = parent;
      table.slots[3 * slot + 1] = entryAt(at) | (1L << 32);
      return;
    }
    if (positionOf(at) < 0) {
      int h = halfOf(at);
      long other = half(entryAt(at), 1 - h);
      if (!halfHasParent(other) || table.slots[3 * slot + 2] == parent) {
        table.slots[3 * slot + 2] = parent;
        setHalf(slot, h, half(entryAt(at), h) | 4);
        return;
      }
      int w = halfWorker(half(entryAt(at), h)); // the halves would name two parents: a record keeps both
      toRecord(table, slot);
      at = locateIn(table, slot, w);
    }
    holdersAt(at).parents[positionOf(at)] = parent;
    holdersAt(at).hasParent[positionOf(at)] = true;
  }

  /**
   * Adds {@code delta} to the entry's child count (never below 0); returns the new count. A count
   * past what half a pair holds moves the pair into a record (so {@code at} is spent).
   */
  private int addChildren(long at, int delta) {
    if (positionOf(at) == SINGLE) {
      long entry = entryAt(at);
      int c = Math.max(0, childrenOf(entry) + delta);
      table.slots[3 * slotOf(at) + 1] = (entry & ((1L << 33) - 1)) | ((long) c << 33);
      return c;
    }
    if (positionOf(at) < 0) {
      int h = halfOf(at);
      long x = half(entryAt(at), h);
      int c = Math.max(0, halfChildren(x) + delta);
      if (c <= HALF_MAX_CHILDREN) {
        setHalf(slotOf(at), h, (x & ((1L << 19) - 1)) | ((long) c << 19));
        return c;
      }
      int slot = slotOf(at);
      toRecord(table, slot);
      at = locateIn(table, slot, halfWorker(x));
    }
    Holders h = holdersAt(at);
    int i = positionOf(at);
    h.children[i] = Math.max(0, h.children[i] + delta);
    return h.children[i];
  }

  /** Adds {@code w}'s entry at {@code hash}, which it does not have. */
  private void addEntry(long hash, int w, int state, boolean knownParent, long parent) {
    Table t = table;
    int slot = t.find(hash);
    if (slot < 0) {
      if (slotsUsed + 1 > MAX_LOAD * t.capacity()) {
        grow();
        t = table;
      }
      slot = -1 - t.findOrEmpty(hash);
      t.slots[3 * slot] = hash;
      t.slots[3 * slot + 2] = parent;
      t.slots[3 * slot + 1] = single(w, state, knownParent, 0);
      slotsUsed++;
      return;
    }
    long entry = t.slots[3 * slot + 1];
    if (entry > 0 && !isPair(entry) && fitsHalf(workerOf(entry), childrenOf(entry)) && fitsHalf(w, 0)
        && !(hasParent(entry) && knownParent && t.slots[3 * slot + 2] != parent)) { // a second holder, same parent
      t.slots[3 * slot + 1] = pair(packHalf(workerOf(entry), stateOf(entry), hasParent(entry), childrenOf(entry)),
          packHalf(w, state, knownParent, 0));
      if (knownParent) {
        t.slots[3 * slot + 2] = parent;
      }
      return;
    }
    Holders h = entry > 0 ? toRecord(t, slot) : holdersOf(entry);
    h.add(w, state, knownParent, parent, 0);
  }

  /** Moves the slot's own entry (single or pair) into a new Holders record, which the slot then names. */
  private Holders toRecord(Table t, int slot) {
    int id = newHolders();
    Holders h = holders[id];
    long entry = t.slots[3 * slot + 1];
    long parent = t.slots[3 * slot + 2];
    if (isPair(entry)) {
      for (int k = 0; k < 2; k++) {
        long x = half(entry, k);
        h.add(halfWorker(x), halfState(x), halfHasParent(x), halfHasParent(x) ? parent : 0, halfChildren(x));
      }
    } else {
      h.add(workerOf(entry), stateOf(entry), hasParent(entry), parent, childrenOf(entry));
    }
    t.slots[3 * slot + 1] = -(1L + id);
    return h;
  }

  /** Deletes the entry; the block's key goes with its last entry. */
  private void deleteEntry(long at) {
    Table t = table;
    int slot = slotOf(at);
    if (positionOf(at) == SINGLE) {
      deleteSlot(t, slot);
      return;
    }
    if (positionOf(at) < 0) { // the pair's other half is the slot's single entry again
      long other = half(t.slots[3 * slot + 1], 1 - halfOf(at));
      t.slots[3 * slot + 1] = single(halfWorker(other), halfState(other), halfHasParent(other), halfChildren(other));
      return;
    }
    int id = (int) (-t.slots[3 * slot + 1] - 1);
    Holders h = holders[id];
    h.removeAt(positionOf(at));
    if (h.size == 1) { // back to the one-holder form
      t.slots[3 * slot + 2] = h.parents[0];
      t.slots[3 * slot + 1] = single(h.workers[0], h.states[0], h.hasParent[0], h.children[0]);
      holders[id] = null;
      freeHolders.add(id);
    }
  }


  /** Empties a slot, shifting later entries of its probe run back (no tombstones). */
  private void deleteSlot(Table t, int slot) {
    long[] s = t.slots;
    int hole = slot;
    int i = slot;
    while (true) {
      i = (i + 1) & t.mask;
      if (s[3 * i + 1] == 0) {
        break;
      }
      int home = t.home(s[3 * i]);
      // Entry i may move to the hole if its home is not in (hole, i] cyclically.
      boolean stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
      if (!stays) {
        s[3 * hole] = s[3 * i];
        s[3 * hole + 2] = s[3 * i + 2];
        s[3 * hole + 1] = s[3 * i + 1];
        hole = i;
      }
    }
    s[3 * hole + 1] = 0;
    s[3 * hole] = 0;
    s[3 * hole + 2] = 0;
    slotsUsed--;
  }

  private void grow() {
    Table old = table;
    Table bigger = new Table(old.capacity() * 2);
    long[] from = old.slots;
    long[] to = bigger.slots;
    for (int i = 0; i < old.capacity(); i++) {
      if (from[3 * i + 1] != 0) {
        int slot = bigger.home(from[3 * i]);
        while (to[3 * slot + 1] != 0) {
          slot = (slot + 1) & bigger.mask;
        }
        to[3 * slot] = from[3 * i];
        to[3 * slot + 1] = from[3 * i + 1];
        to[3 * slot + 2] = from[3 * i + 2];
      }
    }
    table = bigger;
  }

  private int newHolders() {
    int id;
    if (!freeHolders.isEmpty()) {
      id = freeHolders.popInt();
    } else {
      id = holdersUsed++;
      if (id == holders.length) {
        holders = Arrays.copyOf(holders, id * 2);
      }
    }
    holders[id] = new Holders();
    return id;
  }

  // --- Lookups --------------------------------------------------------------------------------

  @Override
  public Map<WorkerId, Overlap> overlaps(long[] sequenceHashes) {
    if (sequenceHashes.length == 0) {
      return Map.of();
    }
    for (int attempt = 0; attempt < 2; attempt++) {
      long stamp = lock.tryOptimisticRead();
      if (stamp == 0) {
        continue;
      }
      try {
        Map<WorkerId, Overlap> result = lookup(sequenceHashes);
        if (lock.validate(stamp)) {
          return result;
        }
      } catch (RuntimeException torn) {
        // An event changed the table under this read (an index out of range, a record half
        // written): nothing of it is kept; read again.
      }
    }
    long stamp = lock.readLock();
    try {
      return lookup(sequenceHashes);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private Map<WorkerId, Overlap> lookup(long[] hashes) {
    Table t = table;
    int first = t.find(hashes[0]);
    if (first < 0) {
      return Map.of();
    }
    long entry = t.slots[3 * first + 1];
    int[] candidates;
    int[] tiers;
    int k = 0;
    if (entry > 0 && !isPair(entry)) {
      if (stateOf(entry) == GHOST) {
        return Map.of();
      }
      candidates = new int[] {workerOf(entry)};
      tiers = new int[] {stateOf(entry)};
      k = 1;
    } else if (entry > 0) {
      candidates = new int[2];
      tiers = new int[2];
      for (int h = 0; h < 2; h++) {
        long x = half(entry, h);
        if (halfState(x) != GHOST) {
          candidates[k] = halfWorker(x);
          tiers[k++] = halfState(x);
        }
      }
    } else {
      Holders h = holdersOf(entry);
      int size = h.size;
      candidates = new int[size];
      tiers = new int[size];
      for (int i = 0; i < size; i++) {
        if (h.states[i] != GHOST) {
          candidates[k] = h.workers[i];
          tiers[k++] = h.states[i];
        }
      }
    }
    if (k == 0) {
      return Map.of();
    }
    // Prefix-closed, all-device workers jump; the rest are walked block by block.
    int[] jumping = new int[k];
    int[] walking = new int[k];
    int nj = 0;
    int nw = 0;
    for (int i = 0; i < k; i++) {
      int w = candidates[i];
      if (ghosts[w] == 0 && offDevice[w] == 0 && unrooted[w] == 0 && tiers[i] == DEVICE) {
        jumping[nj++] = w;
      } else {
        walking[nw++] = i;
      }
    }
    Map<WorkerId, Overlap> result = new HashMap<>(k * 2);
    if (nj > 0) {
      jump(t, hashes, jumping, nj, result);
    }
    if (nw > 0) {
      walk(t, hashes, candidates, tiers, walking, nw, result);
    }
    return result;
  }

  /** {@code w}'s state at {@code slot} of {@code t}: a tier ordinal, GHOST, or ABSENT. */
  private int stateIn(Table t, int slot, int w) {
    long entry = t.slots[3 * slot + 1];
    if (entry > 0) {
      if (!isPair(entry)) {
        return workerOf(entry) == w ? stateOf(entry) : ABSENT;
      }
      long x = half(entry, 0);
      if (halfWorker(x) == w) {
        return halfState(x);
      }
      x = half(entry, 1);
      return halfWorker(x) == w ? halfState(x) : ABSENT;
    }
    Holders h = holdersOf(entry);
    int i = h.indexOf(w);
    return i < 0 ? ABSENT : h.states[i];
  }

  /** Whether {@code w} holds (not as a ghost) the block at {@code slot} of {@code t}. */
  private boolean holds(Table t, int slot, int w) {
    int state = slot < 0 ? ABSENT : stateIn(t, slot, w);
    return state != ABSENT && state != GHOST;
  }

  /** Depths of prefix-closed device-only workers holding block 0: probes every JUMP-th block, binary search where one stops. */
  private void jump(Table t, long[] hashes, int[] live, int n, Map<WorkerId, Overlap> result) {
    int last = hashes.length - 1;
    int pos = 0; // every live worker holds blocks 0..pos
    while (n > 0 && pos < last) {
      int next = Math.min(pos + JUMP, last);
      int slot = t.find(hashes[next]);
      int kept = 0;
      for (int i = 0; i < n; i++) {
        int w = live[i];
        if (holds(t, slot, w)) {
          live[kept++] = w;
        } else {
          int lo = pos;
          int hi = next; // holds lo, not hi
          while (hi - lo > 1) {
            int mid = (lo + hi) >>> 1;
            if (holds(t, t.find(hashes[mid]), w)) {
              lo = mid;
            } else {
              hi = mid;
            }
          }
          result.put(workers[w], new Overlap(lo + 1, 0, 0));
        }
      }
      n = kept;
      pos = next;
    }
    for (int i = 0; i < n; i++) {
      result.put(workers[live[i]], new Overlap(pos + 1, 0, 0));
    }
  }

  /** Depths of the other workers holding block 0, block by block, counting each block's tier. */
  private void walk(Table t, long[] hashes, int[] candidates, int[] firstTiers, int[] which, int n,
      Map<WorkerId, Overlap> result) {
    int[] live = new int[n];
    int[][] tierCounts = new int[n][3];
    int[] slotOf = new int[n];
    for (int i = 0; i < n; i++) {
      live[i] = candidates[which[i]];
      tierCounts[i][firstTiers[which[i]]]++;
      slotOf[i] = i;
    }
    int[] worker = live.clone();
    int alive = n;
    for (int b = 1; b < hashes.length && alive > 0; b++) {
      int slot = t.find(hashes[b]);
      int kept = 0;
      for (int i = 0; i < alive; i++) {
        int state = slot < 0 ? ABSENT : stateIn(t, slot, live[i]);
        if (state != ABSENT && state != GHOST) {
          tierCounts[slotOf[i]][state]++;
          live[kept] = live[i];
          slotOf[kept] = slotOf[i];
          kept++;
        }
      }
      alive = kept;
    }
    for (int i = 0; i < n; i++) {
      result.put(workers[worker[i]], new Overlap(tierCounts[i][0], tierCounts[i][1], tierCounts[i][2]));
    }
  }

  /** Distinct blocks some worker holds (a scan of the table: for tests and diagnostics). */
  public int blockCount() {
    long stamp = lock.readLock();
    try {
      Table t = table;
      int n = 0;
      for (int i = 0; i < t.capacity(); i++) {
        long entry = t.slots[3 * i + 1];
        boolean held;
        if (entry > 0 && isPair(entry)) {
          held = halfState(half(entry, 0)) != GHOST || halfState(half(entry, 1)) != GHOST;
        } else {
          held = entry > 0 ? stateOf(entry) != GHOST : entry < 0 && anyHeld(holdersOf(entry));
        }
        if (held) {
          n++;
        }
      }
      return n;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private static boolean anyHeld(Holders h) {
    for (int i = 0; i < h.size; i++) {
      if (h.states[i] != GHOST) {
        return true;
      }
    }
    return false;
  }

  /** Blocks the index believes {@code worker} holds (as of the last event applied; no lock taken). */
  public int blockCount(WorkerId worker) {
    AtomicInteger c = counts.get(worker);
    return c == null ? 0 : c.get();
  }

  /** Blocks with an entry, ghosts included (for tests: 0 once every worker removed everything). */
  int entries() {
    long stamp = lock.readLock();
    try {
      return slotsUsed;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  public long unknownParents() {
    return unknownParents.get();
  }

  public long unknownRemovals() {
    return unknownRemovals.get();
  }

  public long eventsApplied() {
    return eventsApplied.get();
  }
}
