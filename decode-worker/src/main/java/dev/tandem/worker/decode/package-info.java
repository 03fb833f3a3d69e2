/**
 * The decode role: {@link dev.tandem.worker.decode.RemotePrefills} has a prefill worker compute a
 * prompt, pulls each layer's KV as it is announced, and decodes, prefilling locally on any
 * failure; {@link dev.tandem.worker.decode.DecodeRoleProvider} plugs it into the worker runtime.
 * An aggregated worker is a decode worker that prefills its own prompts.
 */
package dev.tandem.worker.decode;
