import Foundation
import Logging
import NIOPosix
import Prometheus
import Synchronization
import TesseraShared

/// Runs password hashing on its own threads, never on the request threads, and admits a hash only
/// if it can start soon (docs/protocol/accounts.md#passwords, issue 26).
///
/// - **Admission by expected wait.** The pool measures how long queued hashes waited per place
///   ahead of them; a new hash that would wait longer than `maxWait` for a thread (its place × that
///   wait), or find `threads + queueLength` hashes in the pool already, is refused at once with
///   `503 UNAVAILABLE` and a `Retry-After` of the time the pool needs to work off the excess (at
///   least 1 s). So a login storm gets quick refusals its clients retry later, instead of a queue
///   that answers after the token service's internal timeout; the hashes admitted keep the threads
///   busy.
/// - **Abandoned hashes are dropped.** A hash whose caller was cancelled (NIO's pool skips it), or
///   that waited more than twice `maxWait` and at least 4 s (its caller, the token service, gives
///   up after 5 s), is not run when it reaches a thread.
/// - **Priority.** The threads run at `priority` (the service sets `idle`, `SCHED_IDLE`), so the request
///   threads of the process (refreshes, lookups) take a core from a hash whenever they want it. With
///   a `HashWorker` (`TESSERA_HASH_ISOLATION=process`) a thread hands its Firebase-scrypt hash to the
///   worker process, whose scheduling group the kernel weighs below every other process's, and waits.
/// - **Giving way to signed-in users.** While the directory serves other requests (refreshes,
///   lookups: `isInteractive()`), hashes get the shorter `interactiveMaxWait`, and after a hash
///   during which its thread waited for a CPU at least a third as long as it ran, the thread
///   pauses until it has used only `crowdedShare` of a core. No priority of ours reaches other
///   processes or containers (Linux shares the CPU between them first), and a 16 MiB scrypt hash
///   takes the cache from whatever runs beside it; the pause does. Sign-ins alone, refusals
///   included, never trigger it, nor does a demand the threads can meet (`demandExceedsCapacity`)
///   (docs/scaling.md, "Login storms").
/// - **One address cannot take it all.** While hashes of more than one client address are asked
///   for (in the last `mixedWindow`), once a new hash would fill more than `dominantShare` of the
///   pool's room (its places, or the wait limit), an address that already holds more than that share
///   of the hashes in the pool is refused: one client's retry loop leaves the rest of the room to
///   everybody else. An address alone (a backend that signs its users in, a benchmark) keeps the
///   whole pool.
public final class HashingPool: Sendable {
    let pool: NIOThreadPool
    let threads: Int
    let capacity: Int
    let maxWait: Duration
    /// A hash that waited this long is not run (its caller has given up).
    let abandonAfter: Duration
    let priority: ThreadPriority
    /// The share of a core a hashing thread keeps while it is crowded out (1: no pause).
    let crowdedShare: Double
    private let inFlight = Atomic<Int>(0)
    /// Hashes in the pool (running or queued) per client address that has any; an address leaves
    /// when its last hash does, so this holds at most `capacity` entries.
    private let perClient = Mutex<[String: Int]>([:])
    /// When a hash was last asked for by an address while another address had hashes in the pool
    /// (`Self.uptimeNanos`).
    private let mixedAt = Atomic<Int>(Int.min / 2)
    /// The share of the pool's room beyond which an address holding more than this share of the
    /// hashes in the pool is refused.
    static let dominantShare = 0.75
    /// How long after two addresses last met in the pool the share applies.
    static let mixedWindow: Duration = .seconds(5)
    /// The mean time a hash holds its thread (with the pause after it, if any), in microseconds: an
    /// exponentially weighted mean over about the last 8 hashes; 0 until the first one ran.
    private let meanRunMicros = Atomic<Int>(0)
    /// The mean time a hash is on a CPU (the thread's own `schedstat`), in microseconds, weighted as
    /// `meanRunMicros`; 0 where the system does not say. What a hash costs, whoever else runs.
    private let meanCPUMicros = Atomic<Int>(0)
    /// How long a queued hash waited per place ahead of it when it was admitted, in microseconds
    /// (weighted mean over about the last 8 that queued; 0 until one did), and when it last moved
    /// (`Self.uptimeNanos`). What it says beyond the hash time fades by half each second it is not
    /// confirmed: only queued hashes move it, and a pool that admits none learns nothing new.
    private let waitPerPlaceMicros = Atomic<Int>(0)
    private let waitPerPlaceUpdated = Atomic<Int>(0)
    private let priorityFailed = Atomic<Bool>(false)
    /// When a hashing thread last found itself crowded while signed-in users were served, paused
    /// or not (`Self.uptimeNanos`).
    private let crowdedAt = Atomic<Int>(Int.min / 2)
    /// Hashes asked for (admitted or refused), for the sign-in demand's rate (`demandExceedsCapacity`).
    private let asked = Atomic<Int>(0)
    private let demand = Mutex(RateWindow())
    /// The wait limit while signed-in users' requests are being served (`interactive`).
    let interactiveMaxWait: Duration
    /// Requests of signed-in users the directory received (refresh-token rotations and account
    /// reads, `RequestCountMiddleware`); their rate over the last second says whether it serves them.
    private let signedInRequests = Atomic<Int>(0)
    private let traffic = Mutex(RateWindow())
    private let interactiveNow = Atomic<Bool>(false)
    /// When the latest request of a signed-in user arrived (`Self.uptimeNanos`).
    private let lastSignedInRequest = Atomic<Int>(0)
    /// Signed-in users' requests a second above which the directory counts as serving them.
    static let interactiveRequestsPerSecond = 20.0

    /// The rate of a running count over windows of at least a second: `advance` closes the window
    /// once it is a second old, and the rate over it is `rate` until the next one closes.
    private struct RateWindow {
        var start = ContinuousClock.now
        var count = 0
        /// Per second over the last window that closed (nil before the first).
        var rate: Double?

        /// Closes the window if it is at least a second old (`total`: the count now); whether it did.
        mutating func advance(to total: Int, at now: ContinuousClock.Instant) -> Bool {
            let elapsed = now - start
            guard elapsed >= .seconds(1) else { return false }
            rate = Double(total - count) / elapsed.timeInterval
            restart(at: total, now)
            return true
        }

        /// Starts a new window at `total`, keeping `rate`.
        mutating func restart(at total: Int, _ now: ContinuousClock.Instant) {
            start = now
            count = total
        }
    }
    let logger: Logger?
    let depthGauge: Gauge?
    let waitTime: DurationHistogram?
    let refused: Counter?
    let dropped: Counter?
    let yields: Counter?

    public init(
        threads: Int, queueLength: Int, maxWait: Duration = .seconds(2), abandonAfter: Duration? = nil,
        priority: ThreadPriority = .normal, crowdedShare: Double = 1, interactiveMaxWait: Duration? = nil,
        metrics: ServiceMetrics? = nil, logger: Logger? = nil
    ) {
        self.interactiveMaxWait = min(interactiveMaxWait ?? maxWait, maxWait)
        self.crowdedShare = min(1, max(0.01, crowdedShare))
        self.abandonAfter = abandonAfter ?? max(maxWait * 2, .seconds(4))
        self.threads = max(1, threads)
        pool = NIOThreadPool(numberOfThreads: self.threads)
        pool.start()
        capacity = self.threads + max(0, queueLength)
        self.maxWait = maxWait
        self.priority = priority
        self.logger = logger
        depthGauge = metrics?.gauge(
            "password_hash_queue_depth", unit: "operations", help: "Password hashes running or waiting.")
        waitTime = metrics?.latency(
            "password_hash_wait", help: "Time a password hash waits for a hashing thread.")
        refused = metrics?.counter(
            "password_hash_refused",
            help: "Password operations refused with 503 because a hash could not start within the wait limit.")
        dropped = metrics?.counter(
            "password_hash_dropped",
            help: "Admitted password hashes not run because their caller had gone or they waited too long.")
        yields = metrics?.counter(
            "password_hash_yields",
            help: "Hashes after which a hashing thread paused because other threads had kept it waiting for a CPU.")
        metrics?.gauge("password_hash_threads", unit: "", help: "Hashing threads.").set(Double(self.threads))
        metrics?.gauge(
            "password_hash_queue_limit", unit: "",
            help: "Password hashes that may run or wait at once (threads + TESSERA_HASH_QUEUE); beyond it, 503."
        ).set(Double(capacity))
    }

    /// The time a hash admitted now would wait for a thread with `inPool` hashes in the pool (itself
    /// included): its place in the queue times the wait per place, which is the larger of what the
    /// hashes that queued lately waited per place (`waitPerPlaceMicros`) and the mean time a hash
    /// holds its thread (with the pause after it) ÷ the threads. The first lags by a queue's wait,
    /// the second follows every hash.
    ///
    /// The wait per place is measured, not derived from the hash time, because the two part ways
    /// under load: at `idle` priority the hashing threads get what CPU the rest of the machine
    /// leaves, which can be one thread's worth or none for a while, so hashes queued behind a
    /// mean of 30 ms each waited two to four times what the mean predicted (issue 26's storm).
    ///
    /// Both describe the work queued now, never a mode that outlived it (issue 37): the measured wait
    /// beyond the hash time fades by half each second no queued hash confirms it. Without the fading,
    /// a wait measured while refusals' retries starved the idle-priority hashing kept every later hash
    /// from queueing, so no queued hash could ever measure a shorter wait, and the pool went on
    /// refusing at a fraction of its capacity long after the crowd that caused it (a sign-in run that
    /// followed a lookup run served 5 sign-ins a second of about 45).
    ///
    /// While no signed-in user is being served (`interactive` false), the wait per place is the hash's
    /// CPU time ÷ the threads instead: with sign-ins alone, what slows the hashing threads down beyond
    /// their CPU time is the work of the sign-ins the pool refused and their clients sent again at
    /// once. An estimate from the wall-clock waits grows with that work, refuses more, and the pool
    /// settles at a few hashes a second; the CPU time does not grow with it, so the queue takes what
    /// the hashing can work off within the limit and the clients wait in it instead of coming back.
    ///
    /// While signed-in users are served and a hashing thread was crowded in the last second, a place
    /// takes at least the hash's CPU time ÷ (`crowdedShare` × the threads): the pace at which paused
    /// threads work. Without that floor the queue admitted grew past what the pauses serve in time,
    /// the threads then skipped their pauses to keep it (`keepsPromise`), the measured wait shrank
    /// and admitted more: the storm's refreshes lost their share to hashing run flat out.
    func expectedWait(inPool: Int, interactive: Bool = true) -> Duration {
        let place = inPool - threads
        guard place > 0 else { return .zero }
        let cpu = meanCPUMicros.load(ordering: .relaxed)
        guard interactive || cpu == 0 else { return .microseconds(place * (cpu / threads)) }
        let now = Self.uptimeNanos()
        var perPlace = waitPerPlace(now: now)
        if crowdedShare < 1, now - crowdedAt.load(ordering: .relaxed) < 1_000_000_000 {
            perPlace = max(perPlace, Int(Double(cpu) / (crowdedShare * Double(threads))))
        }
        return .microseconds(place * perPlace)
    }

    /// The wait per queue place the pool assumes now, in microseconds.
    func waitPerPlace(now: Int) -> Int {
        let base = meanRunMicros.load(ordering: .relaxed) / threads
        let measured = waitPerPlaceMicros.load(ordering: .relaxed)
        guard measured > base else { return base }
        let age = Double(max(0, now - waitPerPlaceUpdated.load(ordering: .relaxed))) / 1e9
        return base + Int(Double(measured - base) * pow(0.5, age))
    }

    /// Monotonic nanoseconds, for the instants the atomics keep.
    static func uptimeNanos() -> Int { Int(truncatingIfNeeded: DispatchTime.now().uptimeNanoseconds) }

    /// The mean time a hash holds its thread (zero before the first hash).
    public var meanRunTime: Duration { .microseconds(meanRunMicros.load(ordering: .relaxed)) }

    /// Runs `body` on a hashing thread if the pool admits it, for the client at address `client`
    /// (nil: an admin's import or a password set by an admin, which no address's share limits).
    public func run<T: Sendable>(client: String? = nil, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await runMeasured(client: client) {
            let before = ThreadSchedule.current()
            let result = try body()
            return (result, ThreadSchedule.since(before))
        }
    }

    /// `run` for a `body` that says what CPU its work took (nil: unknown), because it was not this
    /// thread's: a hash in the worker process (`HashWorker`).
    func runMeasured<T: Sendable>(client: String?, _ body: @escaping @Sendable () throws -> (T, ThreadSchedule?))
        async throws -> T
    {
        noteHashAsked()
        let admitted = inFlight.add(1, ordering: .relaxed).newValue
        depthGauge?.set(Double(admitted))
        let held = client.map { claim($0, keeping: true) }
        defer {
            // Not inside `depthGauge?.set(…)`: optional chaining would skip the subtraction without a gauge.
            let remaining = inFlight.subtract(1, ordering: .relaxed).newValue
            depthGauge?.set(Double(remaining))
            if let client {
                perClient.withLock { counts in
                    let left = counts[client, default: 1] - 1
                    counts[client] = left > 0 ? left : nil
                }
            }
        }
        if let refusal = refusal(inPool: admitted, heldByClient: held) { throw refusal }
        let job = Job(
            pool: self, queued: ContinuousClock.now, place: admitted - threads, staleAfter: abandonAfter)
        return try await pool.runIfActive { try job.run(body) }
    }

    /// Throws the refusal `run` would answer now, without taking a place: for a sign-in or sign-up,
    /// which reads the database before it hashes. A refused request then costs no PostgreSQL
    /// statement, and a storm of retried refusals leaves the database to the signed-in users
    /// (issue 37). Advisory: `run` decides again when the hash is asked for.
    public func checkAdmission(client: String? = nil) throws {
        let held = client.map { claim($0, keeping: false) }
        if let refusal = refusal(inPool: inFlight.load(ordering: .relaxed) + 1, heldByClient: held) {
            noteHashAsked()
            throw refusal
        }
    }

    /// Counts a hash asked for: each `run`, each refusal of `checkAdmission` (whose request never
    /// gets to `run`), and the refusals the token service made itself (`PasswordGate`) that a sign-in
    /// or sign-up passes on.
    func noteHashAsked(_ count: Int = 1) { asked.add(count, ordering: .relaxed) }

    /// Hashes asked for so far.
    var askedCount: Int { asked.load(ordering: .relaxed) }

    /// Whether, over the last second or so, more hashes were asked for than the threads can hash
    /// flat out (the threads ÷ a hash's CPU time; unknown before the first hash, which counts as
    /// more). Only then do crowded threads pause: when the sign-ins can all be served, pausing
    /// only refuses them. `mixed` at 16 connections asked for 43 a second of a capacity of about
    /// 80, and the pauses refused 73 % of them to keep the refreshes' p99 at 25.5 ms instead of
    /// 23.4 (issue 37). A storm asks for more than the threads can do: refusals are due anyway, and
    /// the pauses keep the signed-in users' share.
    func demandExceedsCapacity() -> Bool {
        let cpu = meanCPUMicros.load(ordering: .relaxed)
        let perHash = cpu > 0 ? cpu : meanRunMicros.load(ordering: .relaxed)
        let total = asked.load(ordering: .relaxed)
        let rate = demand.withLock { window -> Double? in
            _ = window.advance(to: total, at: .now)
            return window.rate
        }
        guard perHash > 0, let rate else { return true }
        return rate > Double(threads) * 1_000_000 / Double(perHash)
    }

    /// The hashes `address` holds in the pool with one more (which it keeps if `keeping`), noting
    /// when another address has hashes there too (`mixedAt`).
    private func claim(_ address: String, keeping: Bool) -> Int {
        perClient.withLock { counts in
            let held = counts[address, default: 0] + 1
            if counts.count > (counts[address] == nil ? 0 : 1) { mixedAt.store(Self.uptimeNanos(), ordering: .relaxed) }
            if keeping { counts[address] = held }
            return held
        }
    }

    /// The number of hashes `client` has in the pool now.
    func held(by client: String) -> Int { perClient.withLock { $0[client, default: 0] } }

    /// The 503 for a hash that would be the `inPool`-th in the pool (itself included), or nil when
    /// it is admitted: beyond the queue, expected to wait longer than the limit, or past
    /// `dominantShare` of the room for a client whose hashes (`heldByClient`, this one included)
    /// are more than that share of the pool's.
    private func refusal(inPool: Int, heldByClient held: Int? = nil) -> FirebaseError? {
        let interactive = isInteractive()
        let limit = interactive ? interactiveMaxWait : maxWait
        let wait = expectedWait(inPool: inPool, interactive: interactive)
        let overLimit = inPool > capacity || wait > limit
        guard overLimit || dominates(held: held ?? 0, inPool: inPool, wait: wait, limit: limit) else { return nil }
        refused?.increment()
        // Retry once the pool has worked off what is beyond the limit (whole seconds, 1…30); an
        // address refused for its share, after a second.
        let seconds = overLimit ? min(30, max(1, Int((wait - limit).timeInterval.rounded(.up)))) : 1
        return FirebaseError.unavailable(
            "Too many password operations in progress; retry shortly.", retryAfterSeconds: seconds)
    }

    /// Whether a client holding `held` of the `inPool` hashes (the new one included in both) takes
    /// more than `dominantShare` of them while the new hash fills more than that share of the
    /// room, of the places or of the wait limit, and another address asked for a hash lately. A
    /// client with one hash never does.
    private func dominates(held: Int, inPool: Int, wait: Duration, limit: Duration) -> Bool {
        let share = Self.dominantShare
        guard held > 1, Double(held) > share * Double(inPool),
            Self.uptimeNanos() - mixedAt.load(ordering: .relaxed) < Int(Self.mixedWindow.timeInterval * 1e9)
        else { return false }
        return Double(inPool) > share * Double(capacity) || wait > limit * share
    }

    /// One admitted hash: what it needs on its thread.
    private struct Job: Sendable {
        let pool: HashingPool
        let queued: ContinuousClock.Instant
        /// Its place in the queue when admitted (0 or less: a thread was free).
        let place: Int
        let staleAfter: Duration

        func run<T>(_ body: () throws -> (T, ThreadSchedule?)) throws -> T {
            let started = ContinuousClock.now
            pool.waitTime?.record(started - queued)
            if place > 0 {
                Self.average(pool.waitPerPlaceMicros, (started - queued) / place)
                pool.waitPerPlaceUpdated.store(HashingPool.uptimeNanos(), ordering: .relaxed)
            }
            guard started - queued <= staleAfter else {
                pool.dropped?.increment()
                throw FirebaseError.unavailable(
                    "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
            }
            pool.applyPriority()
            let (result, use) = try body()
            if let use {
                Self.average(pool.meanCPUMicros, use.onCPU)
                pool.yieldIfCrowded(use)
            }
            Self.average(pool.meanRunMicros, ContinuousClock.now - started)
            return result
        }

        /// Moves a weighted mean (in microseconds) an eighth of the way to `sample`.
        static func average(_ mean: borrowing Atomic<Int>, _ sample: Duration) {
            let micros = Int(sample.timeInterval * 1_000_000)
            var old = mean.load(ordering: .relaxed)
            while true {
                let new = old == 0 ? micros : old + (micros - old) / 8
                let (exchanged, current) = mean.compareExchange(expected: old, desired: new, ordering: .relaxed)
                if exchanged { return }
                old = current
            }
        }
    }

    /// After a hash during which this thread waited for a CPU at least a third as long as it ran
    /// (other threads of the machine wanted the cores: at `idle` priority inside this process, and
    /// in other processes and containers, where no priority of ours reaches), pauses so that the
    /// thread keeps `crowdedShare` of a core: the request threads elsewhere get the rest.
    ///
    /// Only while more hashes are asked for than the threads can do (`demandExceedsCapacity`). Not
    /// while the hashes already queued would then start later than the busy limit allows
    /// (`keepsPromise`): they were admitted, some of them at the faster pace of sign-ins alone
    /// before the signed-in users' traffic began, and a pause that made them wait past
    /// `abandonAfter` turned each into a 503 after 4 s (issue 37's storm, refusals' p99 about 4 s).
    /// The threads hash flat out until the queue is one the pauses can serve in time.
    func yieldIfCrowded(_ use: ThreadSchedule) {
        let ran = use.onCPU
        let waited = use.waiting
        guard ran > .zero, crowdedShare < 1, waited * 3 >= ran, interactiveNow.load(ordering: .relaxed),
            demandExceedsCapacity()
        else { return }
        crowdedAt.store(Self.uptimeNanos(), ordering: .relaxed)
        guard keepsPromise(pausingAfter: ran) else { return }
        yields?.increment()
        Thread.sleep(forTimeInterval: (ran * ((1 - crowdedShare) / crowdedShare)).timeInterval)
    }

    /// Whether every hash queued now still starts within `interactiveMaxWait` if each thread, after
    /// each hash of `ran` on a CPU, pauses to its crowded share: a queue place then takes
    /// `ran ÷ crowdedShare ÷ threads`.
    func keepsPromise(pausingAfter ran: Duration) -> Bool {
        let queued = inFlight.load(ordering: .relaxed) - threads
        guard queued > 0 else { return true }
        return ran * (Double(queued) / (crowdedShare * Double(threads))) <= interactiveMaxWait
    }

    /// Counts a request of a signed-in user: a refresh-token rotation or an account read.
    public func noteSignedInRequest() {
        signedInRequests.add(1, ordering: .relaxed)
        lastSignedInRequest.store(Self.uptimeNanos(), ordering: .relaxed)
    }

    /// Whether, over the last second or so, the directory served at least
    /// `interactiveRequestsPerSecond` requests of signed-in users (refreshes, lookups). Then hashing
    /// gets the short wait limit and, if configured, pauses when crowded. A directory busy with
    /// sign-ins alone, a flood of retried refusals included, keeps the long limit and hashes flat out.
    ///
    /// The rate is taken between two admissions, which may be far apart: a rate over the minute before a
    /// sign-in, when lookups were served and have stopped since, says nothing of now. So no signed-in
    /// user's request in the last second is not interactive, whatever the window held (issue 37).
    func isInteractive() -> Bool {
        let now = ContinuousClock.now
        let requests = signedInRequests.load(ordering: .relaxed)
        guard Self.uptimeNanos() - lastSignedInRequest.load(ordering: .relaxed) < 1_000_000_000 else {
            traffic.withLock { $0.restart(at: requests, now) }
            interactiveNow.store(false, ordering: .relaxed)
            return false
        }
        return traffic.withLock { window in
            guard window.advance(to: requests, at: now), let rate = window.rate else {
                return interactiveNow.load(ordering: .relaxed)
            }
            let interactive = rate >= Self.interactiveRequestsPerSecond
            interactiveNow.store(interactive, ordering: .relaxed)
            return interactive
        }
    }

    private func applyPriority() {
        guard priority != .normal, !priority.applyToCurrentThread(),
            !priorityFailed.exchange(true, ordering: .relaxed)
        else { return }
        logger?.warning(
            "the hashing threads keep normal CPU priority: the system refused the lower one",
            metadata: ["hash.priority": .string(priority.rawValue)])
    }

    public var depth: Int { inFlight.load(ordering: .relaxed) }

    public func shutdown() async throws {
        try await pool.shutdownGracefully()
    }
}
