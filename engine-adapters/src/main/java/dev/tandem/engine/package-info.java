/**
 * The engine SPI ({@link dev.tandem.engine.Engine}) and its value types. Engines: the mocker
 * ({@code mocker}); the built-in transformer engine comes later. The paged block pool shared by
 * engines lives in {@code kv}.
 */
package dev.tandem.engine;
