package dev.tandem.transfer;

import java.lang.foreign.MemorySegment;

/**
 * Memory an agent allocated and registered ({@link TransferAgent#allocate}): the segment to use
 * locally and the descriptor peers read it by. The agent owns the memory until it closes.
 */
public record RegisteredMemory(MemorySegment segment, MemoryDescriptor descriptor) {}
