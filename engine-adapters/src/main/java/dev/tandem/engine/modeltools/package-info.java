/**
 * Tools that write models rather than load them: {@link
 * dev.tandem.engine.modeltools.ModelGenerator} (random weights of a real architecture in real
 * safetensors, for tests and the default model), {@link
 * dev.tandem.engine.modeltools.SafetensorsWriter}, and {@link
 * dev.tandem.engine.modeltools.GgufExport} (a model as GGUF, for comparisons with llama.cpp).
 * {@code tandem model} runs them; the engine's loading and compute path never does.
 */
package dev.tandem.engine.modeltools;
