package dev.tandem.worker;

import dev.tandem.common.ModelCard;
import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerLoadReport;
import dev.tandem.common.WorkerRole;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineLoad;
import dev.tandem.engine.ModelFiles;
import dev.tandem.worker.role.RemotePrefillClient;

/**
 * What a worker says about itself, as records: its description (Describe), its model card, and its
 * load report. Host and CPU set are those of the thread that created it, which the engine's
 * threads inherit.
 *
 * <p>Thread-safe: reads the engine's published info and load, never the engine itself.
 */
final class WorkerFacts {
  private final WorkerId workerId;
  private final WorkerRole role;
  private final EngineLoop loop;
  private final ModelFiles modelFiles;
  private final WorkerKvTransfer transfer; // null: no transfer agent
  private final RemotePrefillClient remote; // null: no remote prefill
  private final CallGate gate;
  private final String host = HostCpus.hostName();
  private final String cpus = HostCpus.allowedCpus();

  WorkerFacts(WorkerId workerId, WorkerRole role, EngineLoop loop, ModelFiles modelFiles, WorkerKvTransfer transfer, RemotePrefillClient remote, CallGate gate) {
    this.workerId = workerId;
    this.role = role;
    this.loop = loop;
    this.modelFiles = modelFiles;
    this.transfer = transfer;
    this.remote = remote;
    this.gate = gate;
  }

  WorkerDescription description() {
    EngineInfo info = loop.engine().info();
    return new WorkerDescription(
        workerId,
        role,
        info.blockSize(),
        info.modelName(),
        info.maxContextLength(),
        info.vocabSize(),
        info.kvBytesPerToken(),
        info.kvCacheDtype(),
        transfer == null ? "" : transfer.handoff().keyRotation(),
        info.totalKvBlocks(),
        info.engineName(),
        info.features().stream().map(f -> f.wireName()).toList(),
        info.eosTokenIds(),
        transfer == null ? "" : transfer.agent().backend(),
        transfer == null ? "" : transfer.agent().address(),
        transfer == null ? null : WorkerKvTransfer.ref(transfer.probe()),
        host,
        cpus,
        transfer == null ? 0 : transfer.handoff().layers(),
        info.batching().maxNumSeqs(),
        info.batching().maxBatchedTokens(),
        transfer == null ? java.util.List.of() : transfer.endpoints().stream()
            .map(e -> new WorkerDescription.TransferEndpoint(e.backend(), e.agent().address(), WorkerKvTransfer.ref(e.probe())))
            .toList(),
        loop.engine().computeDevice(),
        loop.engine().weightQuantization(),
        loop.engine().loraAdapters());
  }

  ModelCard modelCard() {
    EngineInfo info = loop.engine().info();
    return new ModelCard(
        info.modelName(), modelFiles.tokenizerJson(), modelFiles.tokenizerConfigJson(), info.maxContextLength(), info.eosTokenIds(),
        modelFiles.generation(), modelFiles.chatTemplateJinja(), modelFiles.labels());
  }

  WorkerLoadReport load() {
    EngineLoad load = loop.load();
    return new WorkerLoadReport(
        workerId,
        load.runningRequests(),
        load.waitingRequests(),
        load.queuedPrefillTokens(),
        load.kvBlocksUsed(),
        load.kvBlocksTotal(),
        load.lastEventId(),
        loop.prefillCost(),
        remote == null ? 0 : remote.fallbacks(),
        loop.stepSeconds(),
        gate.draining(),
        loop.stepRunningSeconds(),
        loop.engine().loraAdapters());
  }
}
