package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.InternalTls;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.router.SplitPolicy;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import dev.tandem.router.grpc.WorkerPool;
import dev.tandem.worker.WorkerServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Mutual TLS with certificates from {@code tandem certs}: a disaggregated deployment (router →
 * workers over gRPC, decode → prefill over gRPC, the KV pull through the tcp agent) serves under
 * it with the same output as without; a caller without the deployment's certificate, or with
 * another deployment's, reaches no worker.
 */
@org.junit.jupiter.api.Tag("e2e")
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class MutualTlsTest {
  @TempDir Path dir;

  private static int certs(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "certs";
    System.arraycopy(args, 0, all, 1, args.length);
    return new CommandLine(new Main()).execute(all);
  }

  @Test
  void tandemCertsMakesADeploymentAndAddsComponentsToIt() throws Exception {
    Path out = dir.resolve("certs");
    assertEquals(0, certs("--out", out.toString(), "--san", "worker.tandem.svc,10.1.2.3"));
    for (String c : new String[] {"frontend", "worker"}) {
      InternalTls tls = InternalTls.fromDirectory(out.resolve(c)); // checks key ↔ certificate ↔ CA ↔ name
      assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(tls.privateKey()));
      String san = java.security.cert.CertificateFactory.getInstance("X.509")
          .generateCertificate(Files.newInputStream(tls.certificate())).toString();
      assertTrue(san.contains("worker.tandem.svc") && san.contains("10.1.2.3"), san);
    }
    assertEquals(Set.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE), Files.getPosixFilePermissions(out.resolve("ca.key")));
    String ca = Files.readString(out.resolve("ca.crt"));
    assertEquals(0, certs("--out", out.toString(), "--component", "planner"));
    assertEquals(ca, Files.readString(out.resolve("ca.crt")), "a second run reuses the CA");
    InternalTls.fromDirectory(out.resolve("planner"));
    assertNotEquals(0, certs("--out", out.toString(), "--component", "../escape"));
    assertNotEquals(0, certs("--out", out.toString(), "--san", "not a name"));
  }

  @Test
  void aDisaggregatedDeploymentServesUnderMutualTlsAndOutsidersAreRefused() throws Exception {
    Path out = dir.resolve("certs");
    assertEquals(0, certs("--out", out.toString()));
    assertEquals(0, certs("--out", dir.resolve("other").toString())); // another deployment's CA
    InternalTls worker = InternalTls.fromDirectory(out.resolve("worker"));
    Path model = dir.resolve("tiny");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 0, model, 0);
    BuiltinConfig engine = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(32L << 20);
    LocalDeployment.Spec spec =
        new LocalDeployment.Spec(1, () -> BuiltinEngine.open(engine), ModelFiles.fromDirectory(model), 16,
                Router.Config.of("kv").withSplit(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1)),
                new FrontendServer.Config("127.0.0.1", 0, 1 << 20))
            .withDisaggregation(1, new WorkerServer.KvTransfer("tcp", "127.0.0.1", Duration.ofSeconds(30)), false);
    int[] prompt = java.util.stream.IntStream.range(0, 41).map(i -> 100 + i * 7).toArray();
    DisaggregationTest.Generated plain;
    try (LocalDeployment d = LocalDeployment.start(spec)) {
      plain = DisaggregationTest.generate(d.router(), DisaggregationTest.greedy("plain", prompt, 12));
    }
    try (LocalDeployment d = LocalDeployment.start(spec.withTls(worker))) {
      DisaggregationTest.Generated secured = DisaggregationTest.generate(d.router(), DisaggregationTest.greedy("tls", prompt, 12));
      assertArrayEquals(plain.tokens(), secured.tokens(), "same output under mutual TLS");
      assertEquals("prefill-0", secured.first().origin().prefillWorkerId(), "split onto the prefill worker");
      assertEquals("", secured.first().origin().prefillFallback(), "its KV pulled over the TLS tcp agent");
      assertTrue(secured.first().origin().kvTransferBytes() > 0);

      String address = d.router().pool().all().getFirst().address();
      // No certificate: the worker's gRPC port does not answer.
      var none = assertThrows(RuntimeException.class, () -> WorkerClient.connect(address, Duration.ofSeconds(3)).close());
      assertTrue(none.getMessage().contains(address), none.getMessage());
      // Another deployment's certificate: refused too, both ways.
      try (WorkerPool outsider = new WorkerPool(16, Duration.ofSeconds(3), Duration.ofMillis(500),
          InternalTls.fromDirectory(dir.resolve("other").resolve("frontend")))) {
        assertThrows(RuntimeException.class, () -> outsider.add(address));
      }
      // The deployment's own frontend certificate is enough.
      try (WorkerPool frontend = new WorkerPool(16, Duration.ofSeconds(10), Duration.ofMillis(500),
          InternalTls.fromDirectory(out.resolve("frontend")))) {
        frontend.add(address);
        assertEquals(1, frontend.all().size());
      }
      TestDeployments.assertPoolsFull(d);
    }
  }
}
