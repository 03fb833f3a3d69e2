/**
 * Hugging Face model directories: {@link dev.tandem.engine.model.ModelConfig} from {@code
 * config.json}, {@link dev.tandem.engine.model.SafetensorsFile} memory-mapped with the FFM API
 * (single or sharded), and the transformer's {@link dev.tandem.engine.model.ModelWeights}. Every
 * error names the file and the field. Writing models (for tests, benchmarks and {@code tandem
 * model}) is {@code dev.tandem.engine.modeltools}' job.
 */
package dev.tandem.engine.model;
