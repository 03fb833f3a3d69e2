package dev.tandem.common;

/** A span of memory a worker's transfer agent registered: which agent, which region, where in it. */
public record KvRegionRef(String agentAddress, long regionId, long offset, long length) {}
