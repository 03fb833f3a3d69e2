package dev.tandem.planner;

/**
 * The planner's meters, in Micrometer's dotted form; Prometheus shows them as {@code
 * tandem_planner_*} ({@code _total} on counters).
 */
public final class MetricNames {
  private MetricNames() {}

  /** Gauge: requests per second forecast for sizing. */
  public static final String PREDICTED_REQUEST_RATE = "tandem.planner.predicted.request.rate";
  /** Gauge: requests per second measured over the last interval. */
  public static final String OBSERVED_REQUEST_RATE = "tandem.planner.observed.request.rate";
  /** Gauge: forecast mean prompt tokens. */
  public static final String PREDICTED_ISL = "tandem.planner.predicted.isl.tokens";
  /** Gauge: forecast mean output tokens. */
  public static final String PREDICTED_OSL = "tandem.planner.predicted.osl.tokens";
  /** Gauge: forecast fraction of prompt tokens from cache. */
  public static final String PREDICTED_HIT_RATE = "tandem.planner.predicted.prefix.hit.rate";
  /** Gauge, tag {@code pool}: replicas the last decision wants. */
  public static final String DESIRED_REPLICAS = "tandem.planner.desired.replicas";
  /** Gauge, tag {@code pool}: workers serving, as the routers see them. */
  public static final String ACTUAL_REPLICAS = "tandem.planner.actual.replicas";
  /** Gauge, tag {@code pool}: workers asked for and not serving yet. */
  public static final String STARTING_REPLICAS = "tandem.planner.starting.replicas";
  /** Gauge, tag {@code pool}: the SLA mode's correction factor. */
  public static final String CORRECTION = "tandem.planner.correction";
  /** Counter, tags {@code pool}, {@code direction} (up, down, hold): decisions. */
  public static final String DECISIONS = "tandem.planner.decisions";
  /** Counter, tag {@code pool}: scaling actions the connector failed. */
  public static final String CONNECTOR_FAILURES = "tandem.planner.connector.failures";
  /** Counter: scrapes of the frontends' metrics that failed. */
  public static final String SCRAPE_FAILURES = "tandem.planner.scrape.failures";
}
