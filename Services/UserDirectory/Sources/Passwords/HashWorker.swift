import Foundation
import Logging
import Prometheus
import Synchronization
import TesseraShared

#if canImport(Glibc)
    import Glibc
#endif

/// Where the directory's Firebase-scrypt hashes run (`TESSERA_HASH_ISOLATION`).
public enum HashIsolation: String, Sendable, CaseIterable {
    /// On the hashing pool's threads, in the directory's process (the local stack's default).
    case thread
    /// In a child process of the directory's executable (`user-directory hash-worker`), in a session
    /// of its own whose scheduling group runs at `TESSERA_HASH_GROUP_NICE`, or in the cgroup
    /// `TESSERA_HASH_CGROUP` names: the kernel then weighs the hashing against every other process's
    /// work, not only against the directory's own threads (docs/scaling.md, "Login storms").
    case process
}

/// The directory's side of the hash worker process: one channel per hashing thread, a Firebase-scrypt
/// hash per call. The pool's admission, its per-address share and its pauses stay in the directory;
/// a thread of the pool waits (blocked, using no CPU) while a thread of the worker hashes, and the
/// worker reports the CPU the hash took so that admission counts it as its own threads' would.
///
/// A worker that dies or stops answering is killed and started again at the next call; the calls
/// in flight then fail with a retryable 503. Imported hashes of other algorithms (verified once,
/// then re-made as Firebase-scrypt) and passwords longer than a channel's message run on the pool's
/// thread in the directory.
public final class HashWorker: Sendable {
    let executable: String
    let arguments: [String]
    let channels: Int
    let logger: Logger?
    /// Workers started, the first included (`password_hash_worker_starts`): more than one means a
    /// worker died or stopped answering.
    let starts: Counter?
    private let state = Mutex(State())

    private struct State {
        var process: HelperProcess?
        /// Channels of the running process no call holds.
        var free: [Int32] = []
        /// Counts the processes started; a channel of an older one is closed, not reused.
        var generation = 0
        var lastStart: ContinuousClock.Instant?
    }

    /// A worker of `executable` (the directory's own, `/proc/self/exe`) with `channels` channels (the
    /// pool's threads), in a scheduling group at `groupNice`, or in `cgroup` if given, its threads at
    /// `priority`.
    public init(
        executable: String = "/proc/self/exe", channels: Int, groupNice: Int, cgroup: String?,
        priority: ThreadPriority, metrics: ServiceMetrics? = nil, logger: Logger?
    ) {
        self.executable = executable
        self.channels = max(1, channels)
        var arguments = [
            "hash-worker", "--channels", "\(self.channels)", "--group-nice", "\(groupNice)",
            "--priority", priority.rawValue,
        ]
        if let cgroup { arguments += ["--cgroup", cgroup] }
        self.arguments = arguments
        self.logger = logger
        starts = metrics?.counter(
            "password_hash_worker_starts",
            help: "Password hashing worker processes started (TESSERA_HASH_ISOLATION=process), restarts included.")
    }

    /// Starts the process now, and hashes once through it (a trivial hash), so that a worker that
    /// cannot start or cannot join its cgroup stops the directory's start with an error, instead of
    /// answering 503 to every sign-in.
    public func start() throws {
        try state.withLock { state in
            if state.process == nil { try launch(&state) }
        }
        let probe = FirebaseScrypt(signerKey: [1], saltSeparator: [], rounds: 1, memCost: 1)
        do {
            _ = try hash(probe, password: "", salt: [0])
        } catch {
            throw HashWorkerError.notServing(executable)
        }
    }

    /// The running process, if any.
    public var process: HelperProcess? { state.withLock { $0.process } }

    /// The Firebase-scrypt hash of `password` with `salt`, and what it took of a CPU in the worker.
    func hash(_ scrypt: FirebaseScrypt, password: String, salt: [UInt8]) throws -> ([UInt8], ThreadSchedule) {
        let request = HashWorkerMessage.request(scrypt, password: password, salt: salt)
        let (fd, generation) = try checkOut()
        let reply: [UInt8]
        do {
            let channel = HelperChannel(fd: fd)
            try channel.send(request)
            reply = try channel.receive()
        } catch {
            close(fd)
            failed(generation, error)
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
        }
        checkIn(fd, generation)
        guard let answer = HashWorkerMessage.reply(reply) else {
            // A request the worker could not read or hash: a bug of ours, never an end user's input.
            logger?.error("the password hashing process could not hash a request")
            throw FirebaseError.internal
        }
        return answer
    }

    /// Whether a request for `password` fits a channel's message.
    static func carries(password: String, scrypt: FirebaseScrypt) -> Bool {
        password.utf8.count + scrypt.signerKey.count + scrypt.saltSeparator.count + 1024
            <= HelperChannel.maximumMessage
    }

    private func checkOut() throws -> (Int32, Int) {
        try state.withLock { state in
            if state.process == nil { try launch(&state) }
            guard let fd = state.free.popLast() else {
                // More calls than channels: the pool never runs more hashes than its threads.
                throw FirebaseError.unavailable(
                    "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
            }
            return (fd, state.generation)
        }
    }

    private func checkIn(_ fd: Int32, _ generation: Int) {
        state.withLock { state in
            if state.generation == generation { state.free.append(fd) } else { close(fd) }
        }
    }

    /// After a call of process `generation` failed: kills that process (if it is still the current
    /// one) so that the next call starts another.
    private func failed(_ generation: Int, _ error: any Error) {
        let process: HelperProcess? = state.withLock { state in
            guard state.generation == generation, let process = state.process else { return nil }
            for fd in state.free { close(fd) }
            state.free = []
            state.process = nil
            // The calls still holding its channels close them when they end (`checkIn`).
            state.generation += 1
            return process
        }
        guard let process else { return }
        logger?.error(
            "the password hashing process failed; it is started again at the next hash",
            metadata: ["error": "\(error)", "pid": "\(process.pid)"])
        process.kill()
    }

    private func launch(_ state: inout State) throws {
        // A worker that dies at once is not started again in a tight loop.
        if let last = state.lastStart, ContinuousClock.now - last < .seconds(1) {
            throw FirebaseError.unavailable(
                "Too many password operations in progress; retry shortly.", retryAfterSeconds: 1)
        }
        state.lastStart = .now
        let process = try HelperProcess.start(executable: executable, arguments: arguments, channels: channels)
        for fd in process.channels { HelperChannel(fd: fd).setReceiveTimeout(.seconds(60)) }
        state.generation += 1
        state.process = process
        state.free = process.channels
        starts?.increment()
        logger?.info(
            "password hashing runs in its own process",
            metadata: ["pid": "\(process.pid)", "hash.channels": "\(channels)"])
    }

    /// Stops the process: closes its channels (a call still holding one closes it when it ends), then
    /// waits for the process to exit, and kills it after 2 s.
    public func shutdown() {
        let process: HelperProcess? = state.withLock { state in
            for fd in state.free { close(fd) }
            defer {
                state.process = nil
                state.free = []
                state.generation += 1
            }
            return state.process
        }
        process?.reap(killingAfter: .seconds(2))
    }
}

enum HashWorkerError: Error, CustomStringConvertible {
    case notServing(String)

    var description: String {
        switch self {
        case .notServing(let executable):
            "the password hashing process (\(executable) hash-worker) did not answer; its own log lines say why"
        }
    }
}

/// The messages between the directory and its hash worker. A request: a version byte (1), rounds,
/// mem cost, then the lengths of the signer key, the salt separator and the salt (2 bytes each) and of
/// the password (4 bytes), little-endian, then those bytes. A reply: a status byte (0: the hash
/// follows; 1: it failed), the nanoseconds the hash was on a CPU and waited for one (8 bytes each),
/// then the hash.
enum HashWorkerMessage {
    static func request(_ scrypt: FirebaseScrypt, password: String, salt: [UInt8]) -> [UInt8] {
        let secret = Array(password.utf8)
        var bytes: [UInt8] = [1, UInt8(scrypt.rounds), UInt8(scrypt.memCost)]
        for count in [scrypt.signerKey.count, scrypt.saltSeparator.count, salt.count] {
            append(UInt64(count), bytes: 2, to: &bytes)
        }
        append(UInt64(secret.count), bytes: 4, to: &bytes)
        bytes += scrypt.signerKey + scrypt.saltSeparator + salt + secret
        return bytes
    }

    /// The request's hash and password, or nil if `bytes` is not one.
    static func parse(_ bytes: [UInt8]) -> (FirebaseScrypt, password: String, salt: [UInt8])? {
        guard bytes.count >= 13, bytes[0] == 1 else { return nil }
        let rounds = Int(bytes[1])
        let memCost = Int(bytes[2])
        let lengths = [
            read(bytes, at: 3, bytes: 2), read(bytes, at: 5, bytes: 2), read(bytes, at: 7, bytes: 2),
            read(bytes, at: 9, bytes: 4),
        ]
        guard 13 + lengths.reduce(0, +) == bytes.count, (1...8).contains(rounds), (1...17).contains(memCost)
        else { return nil }
        var offset = 13
        var fields: [[UInt8]] = []
        for length in lengths {
            fields.append(Array(bytes[offset..<offset + length]))
            offset += length
        }
        let scrypt = FirebaseScrypt(signerKey: fields[0], saltSeparator: fields[1], rounds: rounds, memCost: memCost)
        return (scrypt, String(decoding: fields[3], as: UTF8.self), fields[2])
    }

    static func reply(hash: [UInt8]?, use: ThreadSchedule?) -> [UInt8] {
        var bytes: [UInt8] = [hash == nil ? 1 : 0]
        for time in [use?.onCPU, use?.waiting] {
            append(UInt64(max(0, ((time ?? .zero).timeInterval * 1e9).rounded())), bytes: 8, to: &bytes)
        }
        return bytes + (hash ?? [])
    }

    /// The reply's hash and CPU use, or nil if the worker failed or `bytes` is not a reply.
    static func reply(_ bytes: [UInt8]) -> ([UInt8], ThreadSchedule)? {
        guard bytes.count >= 17, bytes[0] == 0 else { return nil }
        let use = ThreadSchedule(
            onCPU: .nanoseconds(Int64(read(bytes, at: 1, bytes: 8))),
            waiting: .nanoseconds(Int64(read(bytes, at: 9, bytes: 8))))
        return (Array(bytes[17...]), use)
    }

    private static func append(_ value: UInt64, bytes count: Int, to bytes: inout [UInt8]) {
        for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }

    private static func read(_ bytes: [UInt8], at offset: Int, bytes count: Int) -> Int {
        var value = 0
        for index in 0..<count { value |= Int(bytes[offset + index]) << (8 * index) }
        return value
    }
}

/// The hash worker process (`user-directory hash-worker`, started by the directory): serves each
/// channel on a thread of its own, and exits as soon as one closes: the directory stopped it, or
/// exited (the kernel closed the directory's ends), or killed it to start another.
public enum HashWorkerProcess {
    public static func run(channels: Int, groupNice: Int, cgroup: String?, priority: ThreadPriority) -> Int32 {
        let logger = Logger(label: "user-directory")
        if let cgroup {
            do {
                try HelperProcess.Child.join(cgroup: cgroup)
            } catch {
                logger.error("the password hashing process cannot join its cgroup", metadata: ["error": "\(error)"])
                return 1
            }
        } else if groupNice != 0, !HelperProcess.Child.setGroupNice(groupNice) {
            logger.warning(
                "the password hashing process keeps its scheduling group's nice value: the system refused",
                metadata: ["hash.group_nice": "\(groupNice)"])
        }
        let done = DispatchSemaphore(value: 0)
        for index in 0..<channels {
            let thread = Thread {
                _ = priority.applyToCurrentThread()
                serve(HelperChannel(fd: Int32(3 + index)))
                done.signal()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        done.wait()
        return 0
    }

    private static func serve(_ channel: HelperChannel) {
        while let request = try? channel.receive() {
            var hash: [UInt8]?
            var use: ThreadSchedule?
            if let (scrypt, password, salt) = HashWorkerMessage.parse(request) {
                let before = ThreadSchedule.current()
                hash = try? scrypt.hash(password: password, salt: salt)
                use = ThreadSchedule.since(before)
            }
            guard (try? channel.send(HashWorkerMessage.reply(hash: hash, use: use))) != nil else { return }
        }
    }
}
