/**
 * The seam between the worker runtime and the role modules: {@link
 * dev.tandem.worker.role.RoleProvider} (found through ServiceLoader) creates the {@code Prefill}
 * endpoint of a prefill worker and the remote-prefill client of a decode worker.
 */
package dev.tandem.worker.role;
