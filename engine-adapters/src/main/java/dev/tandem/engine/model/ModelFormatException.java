package dev.tandem.engine.model;

/** A model directory Tandem cannot load; the message names the file and the field or tensor. */
public final class ModelFormatException extends IllegalArgumentException {
  public ModelFormatException(String message) {
    super(message);
  }
}
