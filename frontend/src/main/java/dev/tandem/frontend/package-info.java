/**
 * The frontend: the served model (tokenizer and chat template from a worker's model card), metrics,
 * and the HTTP server in {@code http}. Requests go to workers through the router module.
 */
package dev.tandem.frontend;
