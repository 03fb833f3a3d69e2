/**
 * The shared vocabulary of Tandem's modules: block hashing (DESIGN.md's contract), KV events,
 * worker ids and roles, and the in-process request and response records the frontend, router and
 * workers hand each other ({@link dev.tandem.common.GenerationRequest}, {@link
 * dev.tandem.common.SamplingParams}, {@link dev.tandem.common.TokenChunk}, {@link
 * dev.tandem.common.WorkerDescription}, ...). Plain Java values with no gRPC or Netty types.
 */
package dev.tandem.common;
