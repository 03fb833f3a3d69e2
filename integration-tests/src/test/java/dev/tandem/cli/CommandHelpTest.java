package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** What {@code tandem --help} and {@code tandem model --help} list: one whole sentence a command. */
class CommandHelpTest {
  @Test
  void everyCommandListedHasAWholeSentenceForItsSummary() {
    List<String> cut = new ArrayList<>();
    collectCut(Main.commandLine(), cut);
    assertTrue(cut.isEmpty(), "summaries cut mid-sentence in a command list: " + cut);
  }

  /** The list shows a command's header, or else the first line of its description, and no more. */
  private static void collectCut(CommandLine parent, List<String> cut) {
    for (CommandLine sub : parent.getSubcommands().values()) {
      var usage = sub.getCommandSpec().usageMessage();
      String[] lines = usage.header().length > 0 ? usage.header() : usage.description();
      String summary = lines.length == 0 ? "" : lines[0].strip();
      if (!summary.endsWith(".")) {
        cut.add(sub.getCommandName() + ": \"" + summary + "\"");
      }
      collectCut(sub, cut);
    }
  }
}
