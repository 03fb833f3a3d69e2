package dev.tandem.router;

import dev.tandem.common.WorkerId;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The load the router has committed to each worker and not yet seen end: one active request and
 * the request's decode blocks until it ends, its prefill blocks until its first token. For a split
 * request the prefill worker carries the prompt's uncached blocks (and one active request) until
 * the first token, the decode worker only the blocks it holds.
 *
 * <p>The ledger is the one owner of a routed request's reservation: {@link Reservation} is opened
 * by {@link #reserve} and given back by {@link Reservation#release} exactly once, whatever ends the
 * request (finish, error, cancel, never started); later calls do nothing. {@link #open} counts the
 * reservations not yet released, so tests can check that every path gives its load back.
 *
 * <p>Thread-safe; plain values only.
 */
public final class LoadLedger {
  /** What the router has in flight on one worker. */
  public record Routed(int activeRequests, int prefillBlocks, int decodeBlocks) {
    public static final Routed NONE = new Routed(0, 0, 0);
  }

  private final class Account {
    final WorkerId worker;
    final AtomicInteger active = new AtomicInteger();
    final AtomicInteger prefillBlocks = new AtomicInteger();
    final AtomicInteger decodeBlocks = new AtomicInteger();
    /** When work the router sent here last ended (a prompt computed, a request over); System.nanoTime, 0: never. */
    volatile long settledNanos;

    Account(WorkerId worker) {
      this.worker = worker;
    }

    void add(int active, int prefill, int decode) {
      this.active.addAndGet(active);
      prefillBlocks.addAndGet(prefill);
      decodeBlocks.addAndGet(decode);
      for (Consumer<WorkerId> l : listeners) {
        l.accept(worker);
      }
    }
  }

  private final ConcurrentHashMap<WorkerId, Account> accounts = new ConcurrentHashMap<>();
  private final List<Consumer<WorkerId>> listeners = new CopyOnWriteArrayList<>();
  private final AtomicInteger open = new AtomicInteger();

  /** What is in flight on {@code worker}. */
  public Routed routed(WorkerId worker) {
    Account a = accounts.get(worker);
    return a == null ? Routed.NONE : new Routed(a.active.get(), a.prefillBlocks.get(), a.decodeBlocks.get());
  }

  /**
   * When the router last saw work it sent to {@code worker} end there — a prompt computed or a
   * request over — as {@link System#nanoTime}; 0 if never. A load report the worker took before
   * that still counts the ended work.
   */
  public long settledNanos(WorkerId worker) {
    Account a = accounts.get(worker);
    return a == null ? 0 : a.settledNanos;
  }

  /** Calls {@code listener} with the worker whenever what is in flight there changes (on the changing thread). */
  public void onChange(Consumer<WorkerId> listener) {
    listeners.add(listener);
  }

  /** Reservations opened and not yet released. */
  public int open() {
    return open.get();
  }

  /**
   * Commits a request to {@code worker}: {@code prefillBlocks} it must compute, {@code
   * decodeBlocks} it holds.
   */
  public Reservation reserve(WorkerId worker, int prefillBlocks, int decodeBlocks) {
    return new Reservation(account(worker), prefillBlocks, decodeBlocks, null, 0);
  }

  /**
   * Commits a split request: {@code decode} holds the prompt's {@code decodeBlocks}; {@code
   * prefill} computes {@code prefillBlocks} of them and counts the request as active until the
   * first token.
   */
  public Reservation reserveSplit(WorkerId decode, int decodeBlocks, WorkerId prefill, int prefillBlocks) {
    return new Reservation(account(decode), 0, decodeBlocks, account(prefill), prefillBlocks);
  }

  private Account account(WorkerId worker) {
    return accounts.computeIfAbsent(worker, Account::new);
  }

  /** One request's committed load. Both steps are idempotent; release implies the first token. */
  public final class Reservation {
    private final Account decode;
    private final int decodePrefillBlocks;
    private final int decodeBlocks;
    private final Account prefill; // null: not split
    private final int prefillBlocks;
    private final AtomicBoolean prefilled = new AtomicBoolean();
    private final AtomicBoolean released = new AtomicBoolean();

    private Reservation(Account decode, int decodePrefillBlocks, int decodeBlocks, Account prefill, int prefillBlocks) {
      this.decode = decode;
      this.decodePrefillBlocks = decodePrefillBlocks;
      this.decodeBlocks = decodeBlocks;
      this.prefill = prefill;
      this.prefillBlocks = prefillBlocks;
      decode.add(1, decodePrefillBlocks, decodeBlocks);
      if (prefill != null) {
        prefill.add(1, prefillBlocks, 0);
      }
      open.incrementAndGet();
    }

    /** The first token arrived: the prompt is computed, on whichever worker computed it. */
    public void firstToken() {
      if (prefilled.compareAndSet(false, true)) {
        long now = System.nanoTime();
        decode.settledNanos = now;
        decode.add(0, -decodePrefillBlocks, 0);
        if (prefill != null) {
          prefill.settledNanos = now;
          prefill.add(-1, -prefillBlocks, 0);
        }
      }
    }

    /** The request ended (finished, failed, cancelled) or was never sent. */
    public void release() {
      firstToken();
      if (released.compareAndSet(false, true)) {
        decode.settledNanos = System.nanoTime();
        decode.add(-1, 0, -decodeBlocks);
        open.decrementAndGet();
      }
    }

    public boolean released() {
      return released.get();
    }
  }
}
