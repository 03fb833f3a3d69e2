package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.model.DType;
import org.junit.jupiter.api.Test;

/** The host-side launch arithmetic, checked by hand: every kernel's grid covers its work exactly once. */
class LaunchShapesTest {
  @Test
  void matvecGivesEachOutputRowOneWarp() {
    // 8 warps a block: 1,024 rows → 128 blocks; 1,025 → 129 (the last block's extra warps exit).
    assertEquals(new LaunchShapes.Shape(128, 1, 256), LaunchShapes.matvec(1024));
    assertEquals(new LaunchShapes.Shape(129, 1, 256), LaunchShapes.matvec(1025));
    assertEquals(new LaunchShapes.Shape(1, 1, 256), LaunchShapes.matvec(1));
    // Qwen3-0.6B's LM head: 151,936 rows.
    assertEquals(18_992, LaunchShapes.matvec(151_936).gridX());
  }

  @Test
  void upToEightTokensTakeTheMatrixVectorKernelThenGemm() {
    assertTrue(LaunchShapes.usesMatvec(1));
    assertTrue(LaunchShapes.usesMatvec(8));
    assertFalse(LaunchShapes.usesMatvec(9));
  }

  @Test
  void prefillTilesOfABf16CacheTakeTensorCoresWhereTheHeadFitsTheFragments() {
    assertEquals("attention_tiled_tc_bf16", LaunchShapes.attentionTiledKernel(DType.BF16, 128, true));
    assertEquals("attention_tiled_tc_bf16", LaunchShapes.attentionTiledKernel(DType.BF16, 16, true));
    assertEquals("attention_tiled_bf16", LaunchShapes.attentionTiledKernel(DType.BF16, 128, false), "turned off");
    assertEquals("attention_tiled_bf16", LaunchShapes.attentionTiledKernel(DType.BF16, 72, true), "not a multiple of 16");
    assertEquals("attention_tiled_f16", LaunchShapes.attentionTiledKernel(DType.F16, 128, true));
    assertEquals("attention_tiled_f32", LaunchShapes.attentionTiledKernel(DType.F32, 64, true));
  }

  @Test
  void bf16WeightsPastEightTokensTakeTensorCoresOthersTheSimtGemm() {
    assertEquals("matvec_bf16", LaunchShapes.matmulKernel(8, DType.BF16));
    assertEquals("gemm_tc_bf16", LaunchShapes.matmulKernel(9, DType.BF16));
    assertEquals("gemm_f16", LaunchShapes.matmulKernel(9, DType.F16));
    assertEquals("gemm_f32", LaunchShapes.matmulKernel(2048, DType.F32));
    assertEquals(new LaunchShapes.Shape(16, 32, 128), LaunchShapes.matmul(2048, 1024, DType.BF16));
    assertEquals(new LaunchShapes.Shape(16, 32, 256), LaunchShapes.matmul(2048, 1024, DType.F16));
    assertEquals(new LaunchShapes.Shape(128, 1, 256), LaunchShapes.matmul(1, 1024, DType.BF16));
  }

  @Test
  void gemmTilesRowsAlongXAndTokensAlongY() {
    assertEquals(new LaunchShapes.Shape(16, 32, 256), LaunchShapes.gemm(2048, 1024));
    assertEquals(new LaunchShapes.Shape(1, 1, 256), LaunchShapes.gemm(9, 40));
    assertEquals(new LaunchShapes.Shape(2, 2, 256), LaunchShapes.gemm(65, 65));
  }

  @Test
  void rmsNormUsesAWarpMultipleUpToTheRowAndAtMost256() {
    assertEquals(new LaunchShapes.Shape(7, 1, 64), LaunchShapes.rmsNorm(7, 33));
    assertEquals(new LaunchShapes.Shape(1, 1, 32), LaunchShapes.rmsNorm(1, 1));
    assertEquals(new LaunchShapes.Shape(40, 1, 128), LaunchShapes.rmsNorm(40, 128));
    assertEquals(new LaunchShapes.Shape(3, 1, 256), LaunchShapes.rmsNorm(3, 4096));
  }

  @Test
  void elementwiseCoversEveryElementOnce() {
    assertEquals(new LaunchShapes.Shape(1, 1, 256), LaunchShapes.elementwise(1));
    assertEquals(new LaunchShapes.Shape(40, 1, 256), LaunchShapes.elementwise(10_007));
    assertEquals(new LaunchShapes.Shape(16, 1, 256), LaunchShapes.elementwise(4096));
    assertThrows(IllegalArgumentException.class, () -> LaunchShapes.elementwise(0));
    assertThrows(IllegalArgumentException.class, () -> LaunchShapes.elementwise(1L << 40));
  }

  @Test
  void attentionRunsABlockPerRowAndHeadAndRefusesHeadsPast256() {
    assertEquals(new LaunchShapes.Shape(27, 16, 128), LaunchShapes.attention(27, 16, 128));
    assertEquals(new LaunchShapes.Shape(1, 6, 128), LaunchShapes.attention(1, 6, 256));
    var e = assertThrows(IllegalArgumentException.class, () -> LaunchShapes.attention(1, 8, 512));
    assertTrue(e.getMessage().contains("512"), e.getMessage());
    // More heads than a grid's y may hold.
    assertThrows(IllegalArgumentException.class, () -> LaunchShapes.attention(1, 70_000, 64));
  }

  @Test
  void kernelsAreNamedByTheStoredType() {
    assertEquals("matvec_bf16", LaunchShapes.kernel("matvec", DType.BF16));
    assertEquals("gemm_f16", LaunchShapes.kernel("gemm", DType.F16));
    assertEquals("attention_f32", LaunchShapes.kernel("attention", DType.F32));
  }

  @Test
  void hopperRunsSm90PtxAmpereSm80AndOlderCardsNone() {
    assertEquals("tandem-sm90.ptx", LaunchShapes.ptxResource(9));
    assertEquals("tandem-sm90.ptx", LaunchShapes.ptxResource(10));
    assertEquals("tandem-sm80.ptx", LaunchShapes.ptxResource(8));
    assertNull(LaunchShapes.ptxResource(7));
  }
}
