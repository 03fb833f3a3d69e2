package dev.tandem.common;

import java.util.Collection;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/**
 * What a Hugging Face model directory's {@code generation_config.json} says that serving uses, as
 * vLLM does: the sampling defaults its authors recommend (temperature, top_p, top_k, min_p,
 * repetition_penalty), which requests that do not set them get, and more end-of-sequence tokens
 * ({@code eos_token_id}), which end generation beside {@code config.json}'s. Its other fields
 * ({@code do_sample}, {@code max_new_tokens}, ...) are not read. Workers read and check the file
 * (engine-adapters' {@code GenerationConfigFile}); frontends get it in the model card.
 */
public record GenerationConfig(
    OptionalDouble temperature,
    OptionalDouble topP,
    OptionalInt topK,
    OptionalDouble minP,
    OptionalDouble repetitionPenalty,
    int[] eosTokenIds) {

  /** A directory without the file. */
  public static final GenerationConfig NONE =
      new GenerationConfig(OptionalDouble.empty(), OptionalDouble.empty(), OptionalInt.empty(), OptionalDouble.empty(),
          OptionalDouble.empty(), new int[0]);

  public GenerationConfig {
    eosTokenIds = eosTokenIds.clone();
  }

  @Override
  public int[] eosTokenIds() {
    return eosTokenIds.clone();
  }

  /**
   * The request defaults this file sets, over {@link SamplingParams#DEFAULTS}, where the engine
   * honours the parameter ({@code honoured}: features by their wire names, {@code top_p} and so
   * on): one it does not honour keeps the plain default, so that no request is refused for a
   * parameter it did not set.
   */
  public SamplingParams samplingDefaults(Collection<String> honoured) {
    SamplingParams d = SamplingParams.DEFAULTS;
    return new SamplingParams(
        (float) pick(temperature, "temperature", honoured, d.temperature()),
        (float) pick(topP, "top_p", honoured, d.topP()),
        topK.isPresent() && honoured.contains("top_k") ? topK.getAsInt() : d.topK(),
        (float) pick(minP, "min_p", honoured, d.minP()),
        d.seed(),
        d.presencePenalty(),
        d.frequencyPenalty(),
        (float) pick(repetitionPenalty, "repetition_penalty", honoured, d.repetitionPenalty()),
        d.logprobs());
  }

  private static double pick(OptionalDouble value, String feature, Collection<String> honoured, double otherwise) {
    return value.isPresent() && honoured.contains(feature) ? value.getAsDouble() : otherwise;
  }
}
