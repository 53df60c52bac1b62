import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Ends a process whose shutdown overran. ServiceLifecycle cancels what is still running when the
/// graceful period ends; with a cancellation limit it stops a process that ignores the cancellation
/// with `fatalError` (a crash and a trap, not a log line and an exit status; seen once in the fault
/// tests). The watchdog replaces that limit: graceful shutdown starts its clock (it is the group's
/// last service, so the first told), the group's end disarms it (`disarm`), and if the process is
/// still shutting down `allowance` later it logs one line and exits with status 1.
public final class ShutdownWatchdog: Service, Sendable {
    let allowance: Duration
    let logger: Logger
    let overrun: @Sendable () -> Void
    private let timer = Mutex<Task<Void, Never>?>(nil)

    public init(allowance: Duration, logger: Logger, overrun: (@Sendable () -> Void)? = nil) {
        self.allowance = allowance
        self.logger = logger
        self.overrun = overrun ?? { exit(1) }
    }

    public func run() async throws {
        do {
            try await gracefulShutdown()
        } catch {
            return  // cancelled: the group is going down for another reason, and is not graceful
        }
        let (allowance, logger, overrun) = (allowance, logger, overrun)
        // Unstructured: the group's cancellation must not stop the clock it is timing.
        let task = Task.detached {
            guard (try? await Task.sleep(for: allowance)) != nil else { return }
            logger.critical(
                "shutdown did not finish in time; exiting",
                metadata: ["shutdown.allowance": .string("\(allowance)")])
            overrun()
        }
        timer.withLock { $0 = task }
    }

    /// The shutdown finished: the clock stops.
    public func disarm() {
        timer.withLock { $0?.cancel() }
    }
}
