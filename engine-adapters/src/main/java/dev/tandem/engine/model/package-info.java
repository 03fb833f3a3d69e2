/**
 * Hugging Face model directories: {@link dev.tandem.engine.model.ModelConfig} from {@code
 * config.json}, {@link dev.tandem.engine.model.SafetensorsFile} memory-mapped with the FFM API
 * (single or sharded), the transformer's {@link dev.tandem.engine.model.ModelWeights}, and {@link
 * dev.tandem.engine.model.ModelGenerator}, which writes complete model directories with seeded
 * random weights for tests and benchmarks. Every error names the file and the field.
 */
package dev.tandem.engine.model;
