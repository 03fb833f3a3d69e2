package dev.tandem.frontend.openai;

import java.util.List;

/**
 * A validated score or rerank request ({@code POST /score}, {@code /rerank} and their versioned
 * paths), ready to run as one embeddings request ({@code inputs}), in either of vLLM's two ways:
 *
 * <ul>
 *   <li>an embedding model: {@code inputs} holds the {@code queries} first — one, or one per
 *       document — then the documents, as whole vectors at unit length; a pair's score is the
 *       cosine similarity of its query's and its document's vectors;
 *   <li>a cross-encoder (no {@code queries}: {@link #crossEncoder}): one input per pair, the query
 *       and the document tokenized together; the worker's pooled output is the pair's relevance
 *       logit, and its score is that logit's sigmoid ({@code activation}, vLLM's {@code
 *       use_activation}) or the logit itself.
 * </ul>
 *
 * {@code rerank}: answered as a ranking (the shape of Jina's and Cohere's rerank APIs), with the
 * documents' {@code texts} when {@code returnDocuments}, the best {@code topN} (0: all); else as
 * vLLM's list of scores in input order.
 */
public record ScoreSpec(EmbeddingSpec inputs, int queries, boolean rerank, List<String> texts, int topN, boolean returnDocuments,
    boolean activation) {
  public ScoreSpec {
    texts = List.copyOf(texts);
  }

  /** Whether each input is a query and document read together (none is a query alone). */
  public boolean crossEncoder() {
    return queries == 0;
  }

  /** How many documents are scored. */
  public int documents() {
    return inputs.inputs().size() - queries;
  }

  /**
   * Each document's score, in their order, from {@code pooled}: every input's pooled output in
   * input order (unit vectors of an embedding model, a cross-encoder's one logit per pair).
   */
  public double[] scores(List<float[]> pooled) {
    double[] out = new double[documents()];
    for (int j = 0; j < out.length; j++) {
      if (crossEncoder()) {
        double logit = pooled.get(j)[0];
        out[j] = activation ? 1 / (1 + Math.exp(-logit)) : logit;
        continue;
      }
      float[] q = pooled.get(queries == 1 ? 0 : j);
      float[] d = pooled.get(queries + j);
      double dot = 0;
      for (int k = 0; k < q.length; k++) {
        dot += (double) q[k] * d[k];
      }
      out[j] = dot;
    }
    return out;
  }
}
