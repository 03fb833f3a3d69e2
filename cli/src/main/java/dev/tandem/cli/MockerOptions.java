package dev.tandem.cli;

import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.TimingModel;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/** The mocker engine's settings, shared by {@code serve} and {@code worker}. */
final class MockerOptions {
  @Option(
      names = "--model-name",
      defaultValue = "${env:TANDEM_MODEL_NAME:-" + MockerConfig.DEFAULT_MODEL_NAME + "}",
      description = "Model name the mocker serves (env TANDEM_MODEL_NAME; default ${DEFAULT-VALUE}).")
  String modelName;

  @Option(
      names = "--tokenizer",
      defaultValue = "${env:TANDEM_TOKENIZER}",
      description = "Hugging Face model directory whose tokenizer.json and tokenizer_config.json to serve (env TANDEM_TOKENIZER; default: the bundled Qwen3 tokenizer).")
  Path tokenizer;

  @Option(
      names = "--speedup-ratio",
      defaultValue = "${env:TANDEM_SPEEDUP_RATIO:-1.0}",
      description = "Mocker timing divided by this; 0 means no delay at all (env TANDEM_SPEEDUP_RATIO; default ${DEFAULT-VALUE}).")
  double speedupRatio;

  @Option(names = "--kv-blocks", defaultValue = "${env:TANDEM_KV_BLOCKS:-16384}", description = "KV blocks per worker (default ${DEFAULT-VALUE}).")
  int kvBlocks;

  @Option(names = "--block-size", defaultValue = "${env:TANDEM_BLOCK_SIZE:-16}", description = "Tokens per KV block (default ${DEFAULT-VALUE}).")
  int blockSize;

  @Option(names = "--max-num-seqs", defaultValue = "${env:TANDEM_MAX_NUM_SEQS:-256}", description = "Most sequences in one batch (default ${DEFAULT-VALUE}).")
  int maxNumSeqs;

  @Option(names = "--max-batched-tokens", defaultValue = "${env:TANDEM_MAX_BATCHED_TOKENS:-8192}", description = "Token budget of one engine step (default ${DEFAULT-VALUE}).")
  int maxBatchedTokens;

  @Option(names = "--no-chunked-prefill", description = "Prefill each prompt in one step.")
  boolean noChunkedPrefill;

  @Option(names = "--max-context-length", defaultValue = "${env:TANDEM_MAX_CONTEXT_LENGTH:-32768}", description = "Context window in tokens (default ${DEFAULT-VALUE}).")
  int maxContextLength;

  MockerConfig config() {
    return MockerConfig.defaults()
        .withModelName(modelName)
        .withPool(kvBlocks, blockSize)
        .withBatching(maxNumSeqs, maxBatchedTokens, !noChunkedPrefill)
        .withMaxContextLength(maxContextLength)
        .withTiming(new TimingModel(speedupRatio));
  }

  ModelFiles modelFiles() {
    return tokenizer == null ? ModelFiles.bundledQwen3() : ModelFiles.fromDirectory(tokenizer);
  }
}
