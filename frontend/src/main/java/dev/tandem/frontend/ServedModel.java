package dev.tandem.frontend;

import dev.tandem.frontend.model.ChatTemplate;
import dev.tandem.frontend.model.TextTokenizer;
import dev.tandem.proto.worker.v1.ModelCard;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.router.grpc.WorkerClient;
import java.time.Duration;
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

  /** Reads the registration and model card of a registered worker. */
  public static ServedModel fromWorker(WorkerClient worker, Duration timeout) {
    WorkerRegistration reg = worker.registration();
    ModelCard card = worker.modelCard(timeout);
    String source = "model card of worker " + reg.getWorkerId();
    return new ServedModel(
        reg.getModelName(),
        reg.getMaxContextLength(),
        reg.getVocabSize(),
        reg.getEngine(),
        Set.copyOf(reg.getSupportedFeaturesList()),
        reg.getEosTokenIdsList().stream().mapToInt(Integer::intValue).toArray(),
        TextTokenizer.fromJson(card.getTokenizerJson().toByteArray(), source),
        ChatTemplate.fromTokenizerConfig(card.getTokenizerConfigJson().toByteArray(), source));
  }

  public boolean supports(String feature) {
    return features.contains(feature);
  }
}
