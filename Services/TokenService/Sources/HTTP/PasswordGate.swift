import HTTPTypes
import Prometheus
import Synchronization
import TesseraShared

/// Refuses a client's password sign-ins and sign-ups at the token service for a moment after the
/// directory refused one of them with 503 (its hashing pool had no room, or its database was away),
/// so that a client that sends again at once costs no internal call and no work in the directory
/// (issue 37; docs/scaling.md, "Login storms").
///
/// Per client address: the directory's hashing pool keeps room for other addresses while one takes
/// more than its share, and a gate for everybody would undo that. Nothing but a refusal from the
/// directory closes a gate, and a refusal of the gate's own never extends it, so it cannot outlive
/// the directory's answer by more than `window`.
final class PasswordGate: Sendable {
    /// How long an address is refused here after the directory refused it (zero: never).
    let window: Duration
    /// The most addresses remembered; past it, the ones whose window has ended are forgotten, and if
    /// that is not enough, all (the gate only saves work: forgetting admits to the directory).
    let maximumAddresses: Int
    private let closed = Mutex<[String: Closed]>([:])
    /// Refusals of the gate's own not yet told to the directory: the next call that passes carries
    /// them, so that the hashing pool's count of sign-ins asked for sees the whole demand.
    private let untold = Atomic<Int>(0)
    let refused: Counter?

    private struct Closed {
        var until: ContinuousClock.Instant
        var retryAfterSeconds: Int
    }

    init(window: Duration = .milliseconds(100), maximumAddresses: Int = 4096, metrics: ServiceMetrics? = nil) {
        self.window = window
        self.maximumAddresses = maximumAddresses
        refused = metrics?.counter(
            "password_gate_refused",
            help: "Password sign-ins and sign-ups refused with 503 by the token service, the directory having "
                + "just refused their address.")
    }

    /// Runs a password sign-in or sign-up's call to the directory for the client at `address`
    /// (nil: no address known, all such share one gate), unless the gate is closed for it. The call
    /// gets the gate's refusals since the last call that passed, to tell the directory.
    func pass<T>(_ address: String?, _ call: (_ refusedByGate: Int) async throws -> T) async throws -> T {
        let key = address ?? ""
        if let retryAfter = closedRetryAfter(key, now: .now) {
            refused?.increment()
            untold.add(1, ordering: .relaxed)
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: retryAfter)
        }
        do {
            return try await call(untold.exchange(0, ordering: .relaxed))
        } catch let error as FirebaseError where error.status == .serviceUnavailable && window > .zero {
            close(key, retryAfterSeconds: error.retryAfterSeconds ?? 1, now: .now)
            throw error
        }
    }

    /// The Retry-After the directory gave while the gate for `key` is closed, else nil.
    private func closedRetryAfter(_ key: String, now: ContinuousClock.Instant) -> Int? {
        closed.withLock { gates in
            guard let gate = gates[key] else { return nil }
            guard now < gate.until else {
                gates[key] = nil
                return nil
            }
            return gate.retryAfterSeconds
        }
    }

    private func close(_ key: String, retryAfterSeconds: Int, now: ContinuousClock.Instant) {
        closed.withLock { gates in
            if gates[key] == nil, gates.count >= maximumAddresses {
                gates = gates.filter { now < $0.value.until }
                if gates.count >= maximumAddresses { gates.removeAll() }
            }
            gates[key] = Closed(until: now + window, retryAfterSeconds: retryAfterSeconds)
        }
    }

    /// The addresses remembered now (for tests).
    var count: Int { closed.withLock { $0.count } }
}
