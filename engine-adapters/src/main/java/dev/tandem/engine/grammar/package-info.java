/**
 * Constrained decoding: a JSON schema, a regular expression, a list of choices or an EBNF grammar
 * compiled to a byte-level grammar ({@link dev.tandem.engine.grammar.OutputGrammars}), a matcher that follows a sequence's output through
 * it ({@link dev.tandem.engine.grammar.GrammarState}), and per-step token masks over the model's
 * whole vocabulary ({@link dev.tandem.engine.grammar.TokenMasker}, from the bytes of each token in
 * {@link dev.tandem.engine.grammar.TokenVocabulary}). Plain Java: no engine, gRPC or HTTP types.
 */
package dev.tandem.engine.grammar;
