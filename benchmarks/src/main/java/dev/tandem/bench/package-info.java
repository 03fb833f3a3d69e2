/**
 * The load generator behind {@code tandem bench}: workloads (independent or shared-prefix prompts),
 * fixed concurrency or Poisson arrivals over the OpenAI streaming API, and reports of TTFT, ITL,
 * end-to-end latency and frontend overhead.
 */
package dev.tandem.bench;
