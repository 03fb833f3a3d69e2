package dev.tandem.cli;

import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The model {@code tandem serve} runs when given none: the "tiny" shape (Qwen3 architecture, real
 * Qwen3 tokenizer, seeded random weights), written once to {@code $TANDEM_CACHE} (default {@code
 * ~/.cache/tandem}) and reused. It is written beside its final place and moved there in one step, so
 * two processes starting at once never see half a model.
 */
final class DefaultModel {
  private static final Logger LOG = LoggerFactory.getLogger(DefaultModel.class);
  static final String NAME = "tandem-tiny-qwen3";

  private DefaultModel() {}

  static Path ensure() {
    String cache = System.getenv("TANDEM_CACHE");
    return ensure(cache != null ? Path.of(cache) : Path.of(System.getProperty("user.home"), ".cache", "tandem"));
  }

  /** The default model under {@code root}/models, created there if missing. */
  static Path ensure(Path root) {
    Path dir = root.resolve("models").resolve(NAME);
    if (Files.isRegularFile(dir.resolve("config.json"))) {
      return dir;
    }
    try {
      Files.createDirectories(dir.getParent());
      Path tmp = Files.createTempDirectory(dir.getParent(), NAME + ".");
      LOG.info("creating the default model in {} (seeded random weights; once)", dir);
      ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, tmp, 0);
      try {
        Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
      } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException | java.nio.file.DirectoryNotEmptyException e) {
        // Another process won the race (or the filesystem cannot move atomically): use theirs.
        deleteTree(tmp);
        if (!Files.isRegularFile(dir.resolve("config.json"))) {
          throw new IOException("could not place the default model in " + dir, e);
        }
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the default model under " + root, e);
    }
  }

  private static void deleteTree(Path p) throws IOException {
    try (var walk = Files.walk(p)) {
      for (Path f : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
  }
}
