package dev.tandem.frontend.openai;

import java.util.List;

/**
 * A validated embeddings request ({@code POST /v1/embeddings}), ready to run: the tokenized inputs,
 * the model named ({@code model}: the served model's name or a LoRA adapter's, {@code lora} then
 * that adapter, else null), how the vectors are written ({@code base64}: OpenAI's {@code
 * encoding_format} "base64", little-endian float32, else JSON numbers), OpenAI's {@code dimensions}
 * (0: the model's whole hidden size; else the vector's first that many values, a Matryoshka
 * model's), vLLM's {@code normalize} (to unit length after truncation, the default), vLLM's {@code
 * priority} and {@code request_id} (null: a random id), and Tandem's {@code tandem.worker_id}
 * ({@code pinnedWorker}, null: the router picks).
 */
public record EmbeddingSpec(
    String model,
    String lora,
    List<int[]> inputs,
    boolean base64,
    int dimensions,
    boolean normalize,
    int priority,
    String requestId,
    String pinnedWorker) {
  public EmbeddingSpec {
    inputs = List.copyOf(inputs);
  }
}
