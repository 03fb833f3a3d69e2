package dev.tandem.frontend.openai;

import java.util.List;

/**
 * A validated score or rerank request ({@code POST /score}, {@code /rerank} and their versioned
 * paths), ready to run as embeddings, as vLLM scores with an embedding model: {@code inputs} is an
 * embeddings request of its own (whole vectors at unit length) holding the {@code queries} first —
 * one, or one per document — then the documents; a pair's score is the cosine similarity of its
 * query's and its document's vectors ({@link #scores}). {@code rerank}: answered as a ranking (the
 * shape of Jina's and Cohere's rerank APIs), with the documents' {@code texts} when {@code
 * returnDocuments}, the best {@code topN} (0: all); else as vLLM's list of scores in input order.
 */
public record ScoreSpec(EmbeddingSpec inputs, int queries, boolean rerank, List<String> texts, int topN, boolean returnDocuments) {
  public ScoreSpec {
    texts = List.copyOf(texts);
  }

  /** How many documents are scored. */
  public int documents() {
    return inputs.inputs().size() - queries;
  }

  /**
   * Each document's score, in their order: the dot product of its unit vector with its query's
   * (the one query, or the query at its own index), {@code unit} holding every input's vector in
   * input order.
   */
  public double[] scores(List<float[]> unit) {
    double[] out = new double[documents()];
    for (int j = 0; j < out.length; j++) {
      float[] q = unit.get(queries == 1 ? 0 : j);
      float[] d = unit.get(queries + j);
      double dot = 0;
      for (int k = 0; k < q.length; k++) {
        dot += (double) q[k] * d[k];
      }
      out[j] = dot;
    }
    return out;
  }
}
