package dev.tandem.worker.role;

/**
 * What a role adds to the worker service; either part may be null (off). The worker server owns
 * both and closes the remote-prefill client before the engine.
 */
public record RoleParts(PrefillEndpoint prefill, RemotePrefillClient remote) {
  public static final RoleParts NONE = new RoleParts(null, null);
}
