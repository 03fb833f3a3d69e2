/**
 * The prefill role: {@link dev.tandem.worker.prefill.PrefillCalls} serves the {@code Prefill}
 * call (compute the prompt, announce each layer as it is written, hold the blocks until the decode
 * worker has pulled them); {@link dev.tandem.worker.prefill.PrefillRoleProvider} plugs it into the
 * worker runtime.
 */
package dev.tandem.worker.prefill;
