/**
 * The OpenAI API's request validation ({@link dev.tandem.frontend.openai.RequestParser}) and
 * response shapes ({@link dev.tandem.frontend.openai.ResponseJson}), free of Netty types.
 */
package dev.tandem.frontend.openai;
