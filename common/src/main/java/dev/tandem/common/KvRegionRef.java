package dev.tandem.common;

/**
 * A span of memory a worker's transfer agent registered: which agent, which region, the region's
 * key (without which the agent serves no read), where in it.
 */
public record KvRegionRef(String agentAddress, long regionId, long key, long offset, long length) {}
