package dev.tandem.engine.model;

import dev.tandem.engine.compute.WeightMatrix;

/**
 * One decoder layer's weights. Matrices stay mapped in their file's element type; norms and biases
 * are small and copied to f32 (Gemma's norm offsets w as the factors 1 + w they stand for). Optional
 * parts are null when the architecture has none.
 */
public record LayerWeights(
    float[] inputNorm, // (hidden)
    WeightMatrix q, // (heads × headDim, hidden)
    WeightMatrix k, // (kvHeads × headDim, hidden)
    WeightMatrix v, // (kvHeads × headDim, hidden)
    float[] qBias, // (heads × headDim) or null
    float[] kBias, // (kvHeads × headDim) or null
    float[] vBias, // (kvHeads × headDim) or null
    float[] qNorm, // (headDim), Qwen3 and Gemma 3 only
    float[] kNorm, // (headDim), Qwen3 and Gemma 3 only
    WeightMatrix o, // (hidden, heads × headDim)
    float[] oBias, // (hidden) or null
    float[] attentionOutNorm, // (hidden) of the attention's output, Gemma only (its post_attention_layernorm)
    float[] mlpNorm, // (hidden) before the MLP: post_attention_layernorm (Gemma: pre_feedforward_layernorm)
    WeightMatrix gate, // (intermediate, hidden)
    WeightMatrix up, // (intermediate, hidden)
    WeightMatrix down, // (hidden, intermediate)
    float[] mlpOutNorm) { // (hidden) of the MLP's output, Gemma only (post_feedforward_layernorm)

  /** Its seven matrices: q, k, v, o, gate, up, down. */
  public java.util.List<WeightMatrix> matrices() {
    return java.util.List.of(q, k, v, o, gate, up, down);
  }

  /** This layer with each of its seven matrices replaced by {@code f} of it. */
  public LayerWeights withMatrices(java.util.function.UnaryOperator<WeightMatrix> f) {
    return new LayerWeights(inputNorm, f.apply(q), f.apply(k), f.apply(v), qBias, kBias, vBias, qNorm, kNorm, f.apply(o), oBias,
        attentionOutNorm, mlpNorm, f.apply(gate), f.apply(up), f.apply(down), mlpOutNorm);
  }
}
