package dev.tandem.frontend.openai;

/**
 * A validated classification request ({@code POST /classify}), ready to run as one embeddings
 * request ({@code inputs}) on a sequence classifier, whose pooled outputs are label logits; {@code
 * activation} (vLLM's {@code use_activation}): answered as probabilities (their softmax, a sigmoid for
 * one label), else as the logits themselves.
 */
public record ClassifySpec(EmbeddingSpec inputs, boolean activation) {
  /** One input's answer from its label logits: probabilities where {@code activation}, else the logits. */
  public double[] probabilities(float[] logits) {
    double[] out = new double[logits.length];
    if (!activation) {
      for (int i = 0; i < out.length; i++) {
        out[i] = logits[i];
      }
      return out;
    }
    if (logits.length == 1) {
      out[0] = 1 / (1 + Math.exp(-logits[0]));
      return out;
    }
    double max = Double.NEGATIVE_INFINITY;
    for (float l : logits) {
      max = Math.max(max, l);
    }
    double sum = 0;
    for (int i = 0; i < out.length; i++) {
      out[i] = Math.exp(logits[i] - max);
      sum += out[i];
    }
    for (int i = 0; i < out.length; i++) {
      out[i] /= sum;
    }
    return out;
  }
}
