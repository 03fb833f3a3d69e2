package dev.tandem.frontend;

import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.common.ModelCard;
import dev.tandem.common.WorkerDescription;
import java.util.Set;

/**
 * The model the frontend serves, as its workers describe it: name, context window, the request
 * features the engine honours, and the tokenizer and chat template from the model card.
 *
 * <p>Immutable and thread-safe.
 */
public record ServedModel(
    String name,
    int maxContextLength,
    int vocabSize,
    String engine,
    Set<String> features,
    int[] eosTokenIds,
    TextTokenizer tokenizer,
    ChatTemplate chatTemplate) {

  /** The model a registered worker describes, with the tokenizer from its model card. */
  public static ServedModel of(WorkerDescription worker, ModelCard card) {
    String source = "model card of worker " + worker.workerId();
    return new ServedModel(
        worker.modelName(),
        worker.maxContextLength(),
        worker.vocabSize(),
        worker.engine(),
        Set.copyOf(worker.supportedFeatures()),
        worker.eosTokenIds(),
        TextTokenizer.fromJson(card.tokenizerJson(), source),
        ChatTemplate.fromTokenizerConfig(card.tokenizerConfigJson(), source));
  }

  public boolean supports(String feature) {
    return features.contains(feature);
  }
}
