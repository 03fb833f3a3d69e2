/**
 * The shared vocabulary of Tandem's modules: block hashing (DESIGN.md's contract), KV events,
 * worker ids. Plain Java values with no gRPC or Netty types.
 */
package dev.tandem.common;
