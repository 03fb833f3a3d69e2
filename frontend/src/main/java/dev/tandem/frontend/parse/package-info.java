/**
 * Output parsers for agents: the model's reasoning ({@code <think>…</think>}) split from its
 * answer ({@link dev.tandem.frontend.parse.ReasoningSplitter}), and tool calls in the model
 * family's format turned into OpenAI's {@code tool_calls} ({@link
 * dev.tandem.frontend.parse.ToolCallExtractor}). Both work on streamed text pieces, holding back
 * only what may be the start of a tag. Plain Java; one instance per generated choice.
 */
package dev.tandem.frontend.parse;
