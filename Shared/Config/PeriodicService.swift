import ServiceLifecycle

/// Runs `work` every `interval` until graceful shutdown begins; an interval of zero runs nothing and
/// only waits for the shutdown (so `0s` in a setting means "never", never a busy loop).
public struct PeriodicService: Service {
    let interval: Duration
    let work: @Sendable () async -> Void

    public init(every interval: Duration, _ work: @escaping @Sendable () async -> Void) {
        self.interval = interval
        self.work = work
    }

    public func run() async throws {
        guard interval > .zero else {
            try? await gracefulShutdown()
            return
        }
        do {
            try await cancelWhenGracefulShutdown {
                while true {
                    try await Task.sleep(for: interval)
                    await work()
                }
            }
        } catch is CancellationError {
            return
        }
    }
}
