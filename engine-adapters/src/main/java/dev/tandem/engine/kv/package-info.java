/** The paged KV block pool: reference counts, prefix reuse by sequence hash, LRU eviction, events. */
package dev.tandem.engine.kv;
