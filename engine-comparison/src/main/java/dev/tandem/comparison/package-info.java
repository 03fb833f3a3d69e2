/**
 * Other CPU engines on the same weights as Tandem's built-in engine, measured the same way: {@link
 * dev.tandem.comparison.LlamaCppThroughput} (llama.cpp through de.kherud:llama, on the GGUF that
 * {@code tandem model export-gguf} writes) and {@link dev.tandem.comparison.JlamaThroughput} (Jlama
 * on the safetensors directory). Each prints decode tokens/s at batch sizes and prefill tokens/s at
 * prompt lengths, like {@code dev.tandem.bench.EngineThroughput}.
 */
package dev.tandem.comparison;
