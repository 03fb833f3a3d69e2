package dev.tandem.frontend;

import dev.tandem.frontend.parse.OutputParsers;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.common.ModelCard;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.WorkerDescription;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The model the frontend serves, as its workers describe it: name, context window, the request
 * features the engine honours, the tokenizer and chat template from the model card, the formats
 * its reasoning and tool calls are parsed with, and the sampling a request that sets none gets
 * (the model's generation_config.json over OpenAI's defaults, where the engine honours them), and
 * the LoRA adapters requests may name as their model instead of it (read from {@code adapters} at
 * each use: they load and unload while the frontend serves), and a sequence classifier's class names
 * by id ({@code labels}, from the model card; empty for other models).
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
    OutputParsers parsers,
    SamplingParams samplingDefaults,
    Supplier<List<String>> adapters,
    List<String> labels) {

  public ServedModel {
    adapters = adapters == null ? List::of : adapters;
    labels = labels == null ? List.of() : List.copyOf(labels);
  }

  /** A model without LoRA adapters. */
  public ServedModel(
      String name, int maxContextLength, int vocabSize, String engine, Set<String> features, int[] eosTokenIds,
      TextTokenizer tokenizer, ChatTemplate chatTemplate, OutputParsers parsers, SamplingParams samplingDefaults) {
    this(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate, parsers, samplingDefaults, List::of,
        List.of());
  }

  /** A model whose output is parsed in the formats its chat template shows ({@code auto}), with OpenAI's sampling defaults. */
  public ServedModel(
      String name, int maxContextLength, int vocabSize, String engine, Set<String> features, int[] eosTokenIds,
      TextTokenizer tokenizer, ChatTemplate chatTemplate) {
    this(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate,
        OutputParsers.resolve("auto", "auto", mentions(chatTemplate)), SamplingParams.DEFAULTS);
  }

  /** This model with its output parsed as {@code --reasoning-parser} and {@code --tool-call-parser} say. */
  public ServedModel withParsers(String reasoningParser, String toolCallParser) {
    return withParsers(reasoningParser, toolCallParser, true);
  }

  /** As {@link #withParsers(String, String)}; {@code constrainedCalls}: {@code --tool-call-constraint auto} (true) or {@code none}. */
  public ServedModel withParsers(String reasoningParser, String toolCallParser, boolean constrainedCalls) {
    return new ServedModel(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate,
        OutputParsers.resolve(reasoningParser, toolCallParser, constrainedCalls, mentions(chatTemplate)), samplingDefaults, adapters,
        labels);
  }

  /** Whether the model has a chat template: without one it serves completions, and chat requests get a 400 saying so. */
  public boolean hasChatTemplate() {
    return chatTemplate != null;
  }

  private static java.util.function.Predicate<String> mentions(ChatTemplate template) {
    return template == null ? s -> false : template::mentions;
  }

  /** This model with {@code defaults} for what a request does not set ({@code --generation-config none}: OpenAI's). */
  public ServedModel withSamplingDefaults(SamplingParams defaults) {
    return new ServedModel(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate, parsers, defaults, adapters,
        labels);
  }

  /** The model a registered worker describes, with the tokenizer from its model card. */
  public static ServedModel of(WorkerDescription worker, ModelCard card) {
    return of(worker, card, null);
  }

  /** As {@link #of(WorkerDescription, ModelCard)}, chats rendered with {@code chatTemplate} ({@code --chat-template}; null: the model's). */
  public static ServedModel of(WorkerDescription worker, ModelCard card, String chatTemplate) {
    return of(worker, card, chatTemplate, TextTokenizer.fromJson(card.tokenizerJson(), "model card of worker " + worker.workerId()));
  }

  /**
   * As {@link #of(WorkerDescription, ModelCard, String)}, with {@code tokenizer} already made from
   * the card's {@code tokenizer.json} (a local deployment parses it while its workers start).
   */
  public static ServedModel of(WorkerDescription worker, ModelCard card, String chatTemplate, TextTokenizer tokenizer) {
    String source = "model card of worker " + worker.workerId();
    return new ServedModel(
        worker.modelName(),
        worker.maxContextLength(),
        worker.vocabSize(),
        worker.engine(),
        Set.copyOf(worker.supportedFeatures()),
        worker.eosTokenIds(),
        tokenizer,
        ChatTemplate.forModel(card.tokenizerConfigJson(), card.chatTemplateJinja(), chatTemplate, source))
        .withSamplingDefaults(card.generation().samplingDefaults(worker.supportedFeatures()))
        .withLoraAdapters(List.copyOf(worker.loraAdapters()))
        .withLabels(card.labels());
  }

  /** This model with a sequence classifier's class names {@code labels}, by id. */
  public ServedModel withLabels(List<String> labels) {
    return new ServedModel(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate, parsers,
        samplingDefaults, adapters, labels);
  }

  /** This model with LoRA adapters {@code names}, which requests may name as their model. */
  public ServedModel withLoraAdapters(List<String> names) {
    return withLoraAdapters(() -> names);
  }

  /** This model with the LoRA adapters {@code adapters} lists at each use (a router's, as they load and unload). */
  public ServedModel withLoraAdapters(Supplier<List<String>> adapters) {
    return new ServedModel(name, maxContextLength, vocabSize, engine, features, eosTokenIds, tokenizer, chatTemplate, parsers,
        samplingDefaults, adapters, labels);
  }

  /** The LoRA adapters requests may name now, in the order loaded. */
  public List<String> loraAdapters() {
    return adapters.get();
  }

  /** Whether a request may name {@code model}: this model's name or one of its adapters'. */
  public boolean serves(String model) {
    return name.equals(model) || loraAdapters().contains(model);
  }

  /** The names requests may give, quoted, for an error message. */
  public String servedNames() {
    StringBuilder s = new StringBuilder("`" + name + "`");
    List<String> loraAdapters = loraAdapters();
    if (!loraAdapters.isEmpty()) {
      s.append(" and its LoRA adapters ");
      s.append(String.join(", ", loraAdapters.stream().map(a -> "`" + a + "`").toList()));
    }
    return s.toString();
  }

  public boolean supports(String feature) {
    return features.contains(feature);
  }
}
