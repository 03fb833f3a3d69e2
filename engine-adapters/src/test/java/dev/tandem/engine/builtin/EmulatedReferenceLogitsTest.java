package dev.tandem.engine.builtin;

import dev.tandem.engine.model.DType;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.provider.Arguments;

/**
 * {@link ReferenceLogitsTest}'s cases on the {@code cuda} device forward pass over the emulated
 * GPU ({@code tandem.cu}'s kernels compiled for the CPU): each architecture once, each KV dtype
 * once. Skipped, naming what is missing, without g++ or CUDA's headers; tagged {@code emulation}
 * (about 10 s), so the fast tier leaves it out.
 */
@Tag("emulation")
class EmulatedReferenceLogitsTest extends ReferenceLogitsTest {
  static Stream<Arguments> fixtures() {
    return Stream.of(
        Arguments.of("llama-bf16", "cuda-emulated", DType.BF16),
        Arguments.of("qwen2-f32", "cuda-emulated", DType.F32),
        Arguments.of("phi3-f32", "cuda-emulated", DType.F32),
        Arguments.of("qwen3-f16", "cuda-emulated", DType.F16));
  }
}
