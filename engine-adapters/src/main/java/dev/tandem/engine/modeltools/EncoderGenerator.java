package dev.tandem.engine.modeltools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.model.DType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Writes a small BERT encoder with random weights, as Hugging Face and sentence-transformers lay one
 * out: {@code config.json} ({@code model_type} bert), {@code model.safetensors} (the tensor names
 * of {@code BertModel}), a WordPiece {@code tokenizer.json} over a small English vocabulary (BERT's
 * normalizer and pre-tokenizer, {@code [CLS] … [SEP]} added), {@code tokenizer_config.json}, and,
 * for a pooling other than none, {@code modules.json} with its Pooling module's {@code
 * config.json}. The same seed writes the same bytes.
 */
public final class EncoderGenerator {
  /** The vocabulary: BERT's special tokens, whole words, then single letters and digits with and without "##". */
  static final List<String> VOCAB;

  static {
    List<String> v = new ArrayList<>(List.of("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", "!", "'"));
    v.addAll(List.of("the", "a", "of", "and", "to", "in", "is", "who", "keeps", "keeper", "light", "lighthouse", "house", "sea",
        "shell", "seashell", "tide", "storm", "ship", "harbor", "night", "lamp", "shore", "rock", "wave"));
    for (char c = 'a'; c <= 'z'; c++) {
      if (!v.contains(String.valueOf(c))) { // "a" is a word already
        v.add(String.valueOf(c));
      }
      v.add("##" + c);
    }
    for (char c = '0'; c <= '9'; c++) {
      v.add(String.valueOf(c));
      v.add("##" + c);
    }
    VOCAB = List.copyOf(v);
  }

  private EncoderGenerator() {}

  /**
   * {@code EncoderGenerator OUT SEED [MODEL_TYPE [POOLING]]}: the tiny encoder the reference test
   * checks (hidden 32, 2 layers, 4 heads, MLP 64; bert unless told).
   */
  public static void main(String[] args) throws IOException {
    write(Path.of(args[0]), Long.parseLong(args[1]), args.length > 2 ? args[2] : "bert", 32, 2, 4, 64, args.length > 3 ? args[3] : null);
  }

  /**
   * @param pooling a sentence-transformers Pooling field ({@code pooling_mode_mean_tokens}, …), or
   *     null for no sentence-transformers files (the model's default pooling)
   */
  public static void write(Path out, long seed, int hidden, int layers, int heads, int intermediate, String pooling)
      throws IOException {
    write(out, seed, "bert", hidden, layers, heads, intermediate, pooling);
  }

  /**
   * As {@link #write(Path, long, int, int, int, int, String)}, of {@code modelType} {@code bert} or,
   * laid out as RoBERTa's checkpoints are, {@code roberta} or {@code xlm-roberta}: weights under
   * {@code roberta.}, positions counted from the padding id (1) + 1, one token type.
   */
  public static void write(Path out, long seed, String modelType, int hidden, int layers, int heads, int intermediate,
      String pooling) throws IOException {
    write(out, seed, modelType, hidden, layers, heads, intermediate, 64, pooling);
  }

  /** As above, with {@code maxTokens} positions for an input (RoBERTa's table two longer). */
  public static void write(Path out, long seed, String modelType, int hidden, int layers, int heads, int intermediate,
      int maxTokens, String pooling) throws IOException {
    boolean bert = modelType.equals("bert");
    int positions = bert ? maxTokens : maxTokens + 2;
    int types = bert ? 2 : 1;
    String prefix = bert ? "" : "roberta.";
    Files.createDirectories(out);
    ObjectMapper json = new ObjectMapper();
    ObjectNode config = json.createObjectNode();
    config.putArray("architectures").add(bert ? "BertModel" : modelType.equals("roberta") ? "RobertaModel" : "XLMRobertaModel");
    config.put("model_type", modelType);
    config.put("vocab_size", VOCAB.size());
    config.put("hidden_size", hidden);
    config.put("num_hidden_layers", layers);
    config.put("num_attention_heads", heads);
    config.put("intermediate_size", intermediate);
    config.put("hidden_act", "gelu");
    config.put("max_position_embeddings", positions);
    config.put("type_vocab_size", types);
    config.put("layer_norm_eps", bert ? 1e-12 : 1e-5);
    config.put("pad_token_id", bert ? 0 : 1);
    config.put("position_embedding_type", "absolute");
    config.put("torch_dtype", "float32");
    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("config.json").toFile(), config);

    SafetensorsWriter w = new SafetensorsWriter();
    SplittableRandom r = new SplittableRandom(seed);
    double std = 0.2; // larger than BERT's 0.02 so that a tiny model's layers change its states visibly
    w.add(prefix + "embeddings.word_embeddings.weight", DType.F32, new long[] {VOCAB.size(), hidden}, normal(r.split(), 1));
    w.add(prefix + "embeddings.position_embeddings.weight", DType.F32, new long[] {positions, hidden}, normal(r.split(), std));
    w.add(prefix + "embeddings.token_type_embeddings.weight", DType.F32, new long[] {types, hidden}, normal(r.split(), std));
    w.add(prefix + "embeddings.LayerNorm.weight", DType.F32, new long[] {hidden}, near(r.split(), 1));
    w.add(prefix + "embeddings.LayerNorm.bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
    for (int l = 0; l < layers; l++) {
      String p = prefix + "encoder.layer." + l + ".";
      for (String m : List.of("query", "key", "value")) {
        w.add(p + "attention.self." + m + ".weight", DType.F32, new long[] {hidden, hidden}, normal(r.split(), std));
        w.add(p + "attention.self." + m + ".bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
      }
      w.add(p + "attention.output.dense.weight", DType.F32, new long[] {hidden, hidden}, normal(r.split(), std));
      w.add(p + "attention.output.dense.bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
      w.add(p + "attention.output.LayerNorm.weight", DType.F32, new long[] {hidden}, near(r.split(), 1));
      w.add(p + "attention.output.LayerNorm.bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
      w.add(p + "intermediate.dense.weight", DType.F32, new long[] {intermediate, hidden}, normal(r.split(), std));
      w.add(p + "intermediate.dense.bias", DType.F32, new long[] {intermediate}, normal(r.split(), std));
      w.add(p + "output.dense.weight", DType.F32, new long[] {hidden, intermediate}, normal(r.split(), std));
      w.add(p + "output.dense.bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
      w.add(p + "output.LayerNorm.weight", DType.F32, new long[] {hidden}, near(r.split(), 1));
      w.add(p + "output.LayerNorm.bias", DType.F32, new long[] {hidden}, normal(r.split(), std));
    }
    w.write(out.resolve("model.safetensors"));

    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("tokenizer.json").toFile(), tokenizer(json));
    ObjectNode tc = json.createObjectNode();
    tc.put("do_lower_case", true);
    tc.put("model_max_length", maxTokens);
    tc.put("cls_token", "[CLS]");
    tc.put("sep_token", "[SEP]");
    tc.put("pad_token", "[PAD]");
    tc.put("unk_token", "[UNK]");
    tc.put("mask_token", "[MASK]");
    tc.put("tokenizer_class", "BertTokenizer");
    json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("tokenizer_config.json").toFile(), tc);

    if (pooling != null) {
      ArrayNode modules = json.createArrayNode();
      modules.addObject().put("idx", 0).put("name", "0").put("path", "").put("type", "sentence_transformers.models.Transformer");
      modules.addObject().put("idx", 1).put("name", "1").put("path", "1_Pooling").put("type", "sentence_transformers.models.Pooling");
      modules.addObject().put("idx", 2).put("name", "2").put("path", "2_Normalize").put("type", "sentence_transformers.models.Normalize");
      json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("modules.json").toFile(), modules);
      ObjectNode pool = json.createObjectNode();
      pool.put("word_embedding_dimension", hidden);
      for (String mode : List.of("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens", "pooling_mode_lasttoken")) {
        pool.put(mode, mode.equals(pooling));
      }
      Files.createDirectories(out.resolve("1_Pooling"));
      json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("1_Pooling/config.json").toFile(), pool);
    }
  }

  private static ObjectNode tokenizer(ObjectMapper json) {
    ObjectNode t = json.createObjectNode();
    t.put("version", "1.0");
    t.putNull("truncation");
    t.putNull("padding");
    ArrayNode added = t.putArray("added_tokens");
    for (int id = 0; id < 5; id++) {
      added.addObject().put("id", id).put("content", VOCAB.get(id)).put("single_word", false).put("lstrip", false)
          .put("rstrip", false).put("normalized", false).put("special", true);
    }
    t.putObject("normalizer").put("type", "BertNormalizer").put("clean_text", true).put("handle_chinese_chars", true)
        .putNull("strip_accents").put("lowercase", true);
    t.putObject("pre_tokenizer").put("type", "BertPreTokenizer");
    ObjectNode post = t.putObject("post_processor");
    post.put("type", "TemplateProcessing");
    ArrayNode single = post.putArray("single");
    single.addObject().putObject("SpecialToken").put("id", "[CLS]").put("type_id", 0);
    single.addObject().putObject("Sequence").put("id", "A").put("type_id", 0);
    single.addObject().putObject("SpecialToken").put("id", "[SEP]").put("type_id", 0);
    ArrayNode pair = post.putArray("pair");
    pair.addObject().putObject("SpecialToken").put("id", "[CLS]").put("type_id", 0);
    pair.addObject().putObject("Sequence").put("id", "A").put("type_id", 0);
    pair.addObject().putObject("SpecialToken").put("id", "[SEP]").put("type_id", 0);
    pair.addObject().putObject("Sequence").put("id", "B").put("type_id", 1);
    pair.addObject().putObject("SpecialToken").put("id", "[SEP]").put("type_id", 1);
    ObjectNode specials = post.putObject("special_tokens");
    for (String s : List.of("[CLS]", "[SEP]")) {
      ObjectNode e = specials.putObject(s);
      e.put("id", s);
      e.putArray("ids").add(VOCAB.indexOf(s));
      e.putArray("tokens").add(s);
    }
    t.putObject("decoder").put("type", "WordPiece").put("prefix", "##").put("cleanup", true);
    ObjectNode model = t.putObject("model");
    model.put("type", "WordPiece");
    model.put("unk_token", "[UNK]");
    model.put("continuing_subword_prefix", "##");
    model.put("max_input_chars_per_word", 100);
    ObjectNode vocab = model.putObject("vocab");
    for (int i = 0; i < VOCAB.size(); i++) {
      vocab.put(VOCAB.get(i), i);
    }
    return t;
  }

  private static SafetensorsWriter.Values normal(SplittableRandom r, double std) {
    return () -> (float) (r.nextGaussian() * std);
  }

  private static SafetensorsWriter.Values near(SplittableRandom r, double mean) {
    return () -> (float) (mean + r.nextGaussian() * 0.1);
  }
}
