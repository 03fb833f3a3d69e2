package dev.tandem.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code tandem} launcher. */
@Command(
    name = "tandem",
    mixinStandardHelpOptions = true,
    version = "tandem 0.1.0-SNAPSHOT",
    description = "Tandem: disaggregated LLM serving with an OpenAI-compatible API.",
    subcommands = {
      ServeCommand.class, FrontendCommand.class, WorkerCommand.class, BenchCommand.class, ModelCommand.class,
      LinkProbeCommand.class, SimulateCommand.class, PlannerCommand.class, ProfileCommand.class, CertsCommand.class
    })
public final class Main {
  public static void main(String[] args) {
    // gRPC logs through java.util.logging: into Logback, so that its lines read like every other
    // and logback.xml's levels (io.grpc at WARN) apply to them.
    org.slf4j.bridge.SLF4JBridgeHandler.removeHandlersForRootLogger();
    org.slf4j.bridge.SLF4JBridgeHandler.install();
    System.exit(commandLine().execute(args));
  }

  static CommandLine commandLine() {
    CommandLine cl = new CommandLine(new Main());
    cl.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          if (e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
            commandLine.getErr().println("tandem: " + e.getMessage());
            return 2;
          }
          throw e;
        });
    return cl;
  }
}
