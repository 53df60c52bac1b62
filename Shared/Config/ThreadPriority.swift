import CTesseraRuntime

/// The CPU priority of a service's background threads (`TESSERA_HASH_PRIORITY` for the password
/// hashing threads).
///
/// Password hashing is the one CPU-bound job of the services: a Firebase-scrypt hash holds a core
/// for about 50 ms, while a token refresh or a lookup needs about 1 ms of it. At normal priority the
/// kernel shares the cores between the hashing threads and the request threads by their count, so a
/// login storm that keeps the hashing threads busy slows every signed-in user's refresh. At `idle`
/// (`SCHED_IDLE`) a hashing thread runs only on a core no request thread wants at that moment:
/// sign-ins get the CPU the other requests leave (docs/scaling.md, "Login storms", has the profile).
public enum ThreadPriority: String, Sendable, CaseIterable {
    /// Scheduled like every other thread.
    case normal
    /// `nice` 19: about 1.5 % of a core's share when a thread at nice 0 wants it too.
    case low
    /// `SCHED_IDLE`: runs only when no other thread wants the core.
    case idle

    /// Applies this priority to the calling thread, once per thread: later calls cost a
    /// thread-local read. False if the system refused (the thread keeps its priority).
    public func applyToCurrentThread() -> Bool {
        let mode: Int32 =
            switch self {
            case .normal: 0
            case .low: 1
            case .idle: 2
            }
        return tessera_lower_thread_priority(mode) == 0
    }

    /// The calling thread's scheduling policy and nice value, as the kernel reports them (nil where
    /// unknown). For tests.
    public static func currentThread() -> (idle: Bool, nice: Int)? {
        let value = Int(tessera_thread_scheduling())
        guard value >= 0 else { return nil }
        return (value / 100 == 5, value % 100 - 20)
    }
}

/// A thread's scheduling times (Linux's /proc/thread-self/schedstat): how long it ran and how long it
/// was runnable but waited for a CPU, since it started or (the difference of two readings) over a
/// piece of work.
public struct ThreadSchedule: Sendable, Equatable {
    public var onCPU: Duration
    public var waiting: Duration

    public init(onCPU: Duration, waiting: Duration) {
        self.onCPU = onCPU
        self.waiting = waiting
    }

    /// The times between the reading `before` and this one.
    public static func - (after: ThreadSchedule, before: ThreadSchedule) -> ThreadSchedule {
        ThreadSchedule(onCPU: after.onCPU - before.onCPU, waiting: after.waiting - before.waiting)
    }

    /// The calling thread's times since the reading `before` (nil where the system does not say).
    public static func since(_ before: ThreadSchedule?) -> ThreadSchedule? {
        guard let before, let now = current() else { return nil }
        return now - before
    }

    /// Nil where the system does not say.
    public static func current() -> ThreadSchedule? {
        var onCPU: UInt64 = 0
        var waiting: UInt64 = 0
        guard tessera_thread_schedstat(&onCPU, &waiting) == 0 else { return nil }
        return ThreadSchedule(onCPU: .nanoseconds(Int64(onCPU)), waiting: .nanoseconds(Int64(waiting)))
    }
}
