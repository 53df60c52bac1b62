import CTesseraRuntime
import Logging

/// Gives the C allocator's free memory back to the system on an interval (`TESSERA_HEAP_TRIM_INTERVAL`).
///
/// glibc keeps what a thread frees in that thread's arena for its next allocations and returns it to
/// the system only from the top of the main heap. So a service's resident memory stays at the high-water
/// mark of its busiest minute: after the benchmark's 64-connection runs, an import and a cleanup, the
/// idle directory held 25 MB of freed memory, which `malloc_trim(0)` returned (docs/benchmarks.md).
/// A trim costs a walk of the arenas' free lists and a page fault for each trimmed page used again.
/// A hashing thread's 16 MiB scrypt working set is freed last and so sits at the top of its arena,
/// which glibc does not trim: after a trim it was still resident, and the next hash does not fault it
/// back in.
public enum HeapTrim {
    /// Trims every `interval` (zero: never).
    public static func service(every interval: Duration, logger: Logger) -> PeriodicService {
        PeriodicService(every: interval) {
            let released = trim()
            logger.debug("heap trimmed", metadata: ["heap.released": "\(released)"])
        }
    }

    /// Trims once; true if the allocator gave memory back.
    @discardableResult
    static func trim() -> Bool {
        tessera_heap_trim() == 1
    }
}
