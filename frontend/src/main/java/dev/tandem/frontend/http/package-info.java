/**
 * The frontend's Netty wiring: the HTTP handler, request runs that stream generations back as SSE,
 * OpenAI-shaped errors. Internal to the frontend module; other modules use {@link
 * dev.tandem.frontend.FrontendServer}.
 */
package dev.tandem.frontend.http;
