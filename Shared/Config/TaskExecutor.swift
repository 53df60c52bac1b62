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
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
            ? .eventLoops : .swiftPoolFallback
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
