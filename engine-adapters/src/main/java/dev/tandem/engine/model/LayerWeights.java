package dev.tandem.engine.model;

import dev.tandem.engine.compute.WeightMatrix;

/**
 * One decoder layer's weights. Matrices stay mapped in their file's element type; norms and biases
 * are small and copied to f32. Optional parts are null when the architecture has none.
 */
public record LayerWeights(
    float[] inputNorm, // (hidden)
    WeightMatrix q, // (heads × headDim, hidden)
    WeightMatrix k, // (kvHeads × headDim, hidden)
    WeightMatrix v, // (kvHeads × headDim, hidden)
    float[] qBias, // (heads × headDim) or null
    float[] kBias, // (kvHeads × headDim) or null
    float[] vBias, // (kvHeads × headDim) or null
    float[] qNorm, // (headDim), Qwen3 only
    float[] kNorm, // (headDim), Qwen3 only
    WeightMatrix o, // (hidden, heads × headDim)
    float[] oBias, // (hidden) or null
    float[] postAttentionNorm, // (hidden)
    WeightMatrix gate, // (intermediate, hidden)
    WeightMatrix up, // (intermediate, hidden)
    WeightMatrix down) {} // (hidden, intermediate)
