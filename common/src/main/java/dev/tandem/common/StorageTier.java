package dev.tandem.common;

/** Where a cached KV block lives; the router credits each tier differently. */
public enum StorageTier {
  DEVICE,
  HOST,
  DISK
}
