package dev.tandem.frontend;

import dev.tandem.frontend.parse.OutputParsers;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.common.ModelCard;
import dev.tandem.common.WorkerDescription;
import java.util.Set;

/**
 * The model the frontend serves, as its workers describe it: name, context window, the request
 * features the engine honours, the tokenizer and chat template from the model card, and the
 * formats its reasoning and tool calls are parsed with.
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
    ChatTemplate chatTemplate,
    OutputParsers parsers) {

  /** A model whose output is parsed in the formats its chat template shows ({@code auto}). */
  public ServedModel(
      String name, int maxContextLength, int vocabSize, String engine, Set<String> features, int[] eosTokenIds,
      TextTokenizer tokenizer, ChatTemplate chatTemplate) {
    this(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate,
        OutputParsers.resolve("auto", "auto", chatTemplate::mentions));
  }

  /** This model with its output parsed as {@code --reasoning-parser} and {@code --tool-call-parser} say. */
  public ServedModel withParsers(String reasoningParser, String toolCallParser) {
    return new ServedModel(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate,
        OutputParsers.resolve(reasoningParser, toolCallParser, chatTemplate::mentions));
  }

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
