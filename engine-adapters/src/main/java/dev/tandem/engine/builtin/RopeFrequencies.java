package dev.tandem.engine.builtin;

import dev.tandem.engine.model.ModelConfig;

/**
 * RoPE inverse frequencies per dimension pair of the rotated part of a head ({@link
 * ModelConfig#rotaryDim}), with Hugging Face's linear, Llama-3 and LongRoPE scaling.
 */
final class RopeFrequencies {
  private RopeFrequencies() {}

  /**
   * One layer's rotation: the frequencies of the first {@code 2·invFreq.length} dimensions of each
   * head, and the factor cos and sin are multiplied by (LongRoPE's attention factor; else 1).
   */
  record Rotation(float[] invFreq, float scale) {}

  /**
   * The frequencies of the model's full-attention layers ({@code rope_theta}, {@code rope_scaling});
   * LongRoPE's divisors as an engine serving {@code context} positions picks them.
   */
  static float[] of(ModelConfig config, int context) {
    return of(config.rotaryDim(), config.ropeTheta(), config.ropeScaling(), context);
  }

  /**
   * The rotation of layer {@code layer} in an engine serving {@code context} positions: a sliding
   * layer of a model with its own local base (Gemma 3's {@code rope_local_base_freq}) rotates by
   * that base, unscaled.
   */
  static Rotation of(ModelConfig config, int layer, int context) {
    if (config.localRopeTheta() > 0 && config.slides(layer)) {
      return new Rotation(of(config.rotaryDim(), config.localRopeTheta(), ModelConfig.RopeScaling.NONE, context), 1f);
    }
    return new Rotation(of(config, context), (float) config.ropeScaling().attentionFactor());
  }

  private static float[] of(int dim, double theta, ModelConfig.RopeScaling s, int context) {
    double[] divisors = s.type().equals("longrope") ? s.factorsFor(context) : null;
    float[] inv = new float[dim / 2];
    for (int i = 0; i < inv.length; i++) {
      double f = 1.0 / Math.pow(theta, (2.0 * i) / dim);
      inv[i] = (float) switch (s.type()) {
        case "linear" -> f / s.factor();
        case "llama3" -> llama3(f, s);
        case "longrope" -> f / divisors[i];
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
