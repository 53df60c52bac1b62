import CMallocTuning

enum MemoryTuning {
    /// Each Firebase-scrypt hash (N = 2^14, r = 8) allocates a 16 MiB buffer. glibc serves blocks
    /// that large with mmap at first, but raises its threshold after the first free, so later
    /// buffers come from the heap and the memory is kept after the hash: a directory that has hashed
    /// once holds tens of MiB it no longer uses. A fixed threshold keeps every such buffer mmapped
    /// and returned at once (measured with scripts/bench: see docs/benchmarks.md).
    static func returnLargeBuffersToTheSystem() {
        _ = tessera_set_mmap_threshold(1 << 20)
    }
}
