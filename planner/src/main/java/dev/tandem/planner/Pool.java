package dev.tandem.planner;

/** The two pools a planner sizes. */
public enum Pool {
  PREFILL("prefill"),
  DECODE("decode");

  private final String cliName;

  Pool(String cliName) {
    this.cliName = cliName;
  }

  /** The name flags, metrics and the chart use. */
  public String cliName() {
    return cliName;
  }
}
