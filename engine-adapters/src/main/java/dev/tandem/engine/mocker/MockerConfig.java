package dev.tandem.engine.mocker;

/**
 * The mocker's shape. Defaults stand for Qwen3-0.6B (KV 114,688 bytes per token at bf16, 28 layers
 * × 8 KV heads × 128 × 2 × 2) on a pool of 16,384 blocks of 16 tokens.
 *
 * @param regularVocabSize tokens are drawn from ids below this (the tokenizer's regular vocabulary,
 *     so no special tokens are produced)
 */
public record MockerConfig(
    String modelName,
    int blockSize,
    int totalKvBlocks,
    int maxNumSeqs,
    int maxBatchedTokens,
    boolean chunkedPrefill,
    int maxContextLength,
    int vocabSize,
    int regularVocabSize,
    long kvBytesPerToken,
    int[] eosTokenIds,
    TimingModel timing) {

  public static final String DEFAULT_MODEL_NAME = "tandem/mocker-qwen3-0.6b";

  public MockerConfig {
    if (blockSize <= 0 || totalKvBlocks <= 0 || maxNumSeqs <= 0 || maxBatchedTokens <= 0) {
      throw new IllegalArgumentException(
          "block size, KV blocks, max_num_seqs and max_batched_tokens must be positive");
    }
    if (regularVocabSize <= 0 || regularVocabSize > vocabSize) {
      throw new IllegalArgumentException("regular vocabulary must be in (0, vocabSize]");
    }
    eosTokenIds = eosTokenIds.clone();
  }

  public static MockerConfig defaults() {
    return new MockerConfig(
        DEFAULT_MODEL_NAME,
        16,
        16_384,
        256,
        8_192,
        true,
        32_768,
        151_936,
        151_643,
        114_688L,
        new int[] {151_645, 151_643},
        TimingModel.realTime());
  }

  public MockerConfig withTiming(TimingModel timing) {
    return new MockerConfig(
        modelName, blockSize, totalKvBlocks, maxNumSeqs, maxBatchedTokens, chunkedPrefill,
        maxContextLength, vocabSize, regularVocabSize, kvBytesPerToken, eosTokenIds, timing);
  }

  public MockerConfig withPool(int totalKvBlocks, int blockSize) {
    return new MockerConfig(
        modelName, blockSize, totalKvBlocks, maxNumSeqs, maxBatchedTokens, chunkedPrefill,
        maxContextLength, vocabSize, regularVocabSize, kvBytesPerToken, eosTokenIds, timing);
  }

  public MockerConfig withBatching(int maxNumSeqs, int maxBatchedTokens, boolean chunkedPrefill) {
    return new MockerConfig(
        modelName, blockSize, totalKvBlocks, maxNumSeqs, maxBatchedTokens, chunkedPrefill,
        maxContextLength, vocabSize, regularVocabSize, kvBytesPerToken, eosTokenIds, timing);
  }

  public MockerConfig withModelName(String modelName) {
    return new MockerConfig(
        modelName, blockSize, totalKvBlocks, maxNumSeqs, maxBatchedTokens, chunkedPrefill,
        maxContextLength, vocabSize, regularVocabSize, kvBytesPerToken, eosTokenIds, timing);
  }

  public MockerConfig withMaxContextLength(int maxContextLength) {
    return new MockerConfig(
        modelName, blockSize, totalKvBlocks, maxNumSeqs, maxBatchedTokens, chunkedPrefill,
        maxContextLength, vocabSize, regularVocabSize, kvBytesPerToken, eosTokenIds, timing);
  }
}
