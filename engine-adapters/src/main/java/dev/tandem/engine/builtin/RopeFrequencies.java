package dev.tandem.engine.builtin;

import dev.tandem.engine.model.ModelConfig;

/** RoPE inverse frequencies per dimension pair, with Hugging Face's linear and Llama-3 scaling. */
final class RopeFrequencies {
  private RopeFrequencies() {}

  /** The frequencies of the model's full-attention layers ({@code rope_theta}, {@code rope_scaling}). */
  static float[] of(ModelConfig config) {
    return of(config.headDim(), config.ropeTheta(), config.ropeScaling());
  }

  /**
   * The frequencies of layer {@code layer}: a sliding layer of a model with its own local base
   * (Gemma 3's {@code rope_local_base_freq}) rotates by that base, unscaled.
   */
  static float[] of(ModelConfig config, int layer) {
    if (config.localRopeTheta() > 0 && config.slides(layer)) {
      return of(config.headDim(), config.localRopeTheta(), ModelConfig.RopeScaling.NONE);
    }
    return of(config);
  }

  private static float[] of(int dim, double theta, ModelConfig.RopeScaling s) {
    float[] inv = new float[dim / 2];
    for (int i = 0; i < inv.length; i++) {
      double f = 1.0 / Math.pow(theta, (2.0 * i) / dim);
      inv[i] = (float) switch (s.type()) {
        case "linear" -> f / s.factor();
        case "llama3" -> llama3(f, s);
        default -> f;
      };
    }
    return inv;
  }

  /**
   * Llama 3.1's rule: long wavelengths are divided by the factor, short ones kept, and the band
   * between them interpolated.
   */
  private static double llama3(double f, ModelConfig.RopeScaling s) {
    double lowFreqWavelen = s.originalMaxPositions() / s.lowFreqFactor();
    double highFreqWavelen = s.originalMaxPositions() / s.highFreqFactor();
    double wavelen = 2 * Math.PI / f;
    if (wavelen < highFreqWavelen) {
      return f;
    }
    if (wavelen > lowFreqWavelen) {
      return f / s.factor();
    }
    double smooth =
        (s.originalMaxPositions() / wavelen - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
    return (1 - smooth) * f / s.factor() + smooth * f;
  }
}
