import CTesseraRuntime
import Logging
import NIOCore
import NIOPosix

/// Where Swift concurrency runs a service's tasks (`TESSERA_TASKS_ON_EVENT_LOOPS`, default true).
///
/// On: NIO's event-loop threads are the global executor, so a handler resumed by I/O (a request
/// read, a PostgreSQL row, an internal call's answer) continues on the thread that did the I/O
/// instead of waking one of Swift's own pool threads: a thread switch less per await under load
/// (docs/benchmarks.md has the numbers). Nothing in the services may block a task for long;
/// password hashing has threads of its own.
public enum TaskExecutorSetup: String, Sendable {
    case eventLoops = "event-loops"
    case swiftPool = "swift-pool"
    /// Asked for, but NIO could not install its hook (another one was installed first).
    case swiftPoolFallback = "swift-pool-fallback"

    public static func enabled(_ env: ConfigReader) throws -> Bool {
        try env.bool("TESSERA_TASKS_ON_EVENT_LOOPS", default: true)
    }

    /// Installs the event loops as the global executor when configured. Call once, first thing in
    /// a service's entry point, before any task is started.
    public static func install(_ env: ConfigReader = ConfigReader()) throws -> TaskExecutorSetup {
        guard try enabled(env) else { return .swiftPool }
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() {
            return .eventLoops
        }
        // NIO looks the hook up with dlsym, which finds nothing in a binary that links the Swift
        // runtime statically (the container image, release stacks): there the symbol is local.
        // The same hook, installed through the linker's address of it.
        return installThroughLinker() ? .eventLoops : .swiftPoolFallback
    }

    /// Swift Concurrency's global-enqueue hook: the job, and the runtime's own enqueue (unused).
    private typealias EnqueueGlobalHook =
        @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// What NIO's hook does: a job goes to the event loop it is enqueued from (NIO's `any()` is
    /// sticky), or to the next loop of the singleton group.
    private static func installThroughLinker() -> Bool {
        let hook: EnqueueGlobalHook = { job, _ in
            MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
        }
        return withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { storage in
            storage.baseAddress!.initialize(to: hook)
            return storage.baseAddress!.withMemoryRebound(to: UnsafeMutableRawPointer.self, capacity: 1) {
                tessera_swift_install_enqueue_global_hook($0.pointee)
            }
        }
    }

    /// Where the linker found the runtime's global-enqueue hook (nil if the runtime has none). For
    /// tests: with a shared runtime it must be the address dlsym gives.
    static var linkedEnqueueGlobalHookAddress: UnsafeMutableRawPointer? {
        tessera_swift_enqueue_global_hook_address().map { UnsafeMutableRawPointer($0) }
    }

    /// One startup line saying where tasks run (`tasks.executor`); a warning if the event loops
    /// were asked for and could not be had.
    public func log(to logger: Logger) {
        let metadata: Logger.Metadata = ["tasks.executor": .string(rawValue)]
        if self == .swiftPoolFallback {
            logger.warning(
                "tasks run on Swift's thread pool: the event loops could not be installed", metadata: metadata)
        } else {
            logger.info("task executor chosen", metadata: metadata)
        }
    }
}
