import Foundation
import HTTPTypes
import Testing

@testable import TesseraShared
@testable import UserDirectory

#if canImport(Glibc)
    import Glibc
#endif

/// The directory's password hashing in a process of its own (`TESSERA_HASH_ISOLATION=process`): the
/// real `user-directory hash-worker`, built beside this test binary.
@Suite("hash worker process", .serialized)
struct HashWorkerTests {
    static let key = HashKey(signerKey: Array(repeating: 7, count: 64), saltSeparator: [1])
    static let keys = ScopeHashKeys(own: key, project: key)

    /// The `user-directory` executable `swift build --build-tests` puts beside the test binary.
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("user-directory").path
    }

    static func worker(groupNice: Int = 19) -> HashWorker {
        HashWorker(
            executable: executable, channels: 2, groupNice: groupNice, cgroup: nil, priority: .idle, logger: nil)
    }

    @Test("a request and a reply read back as they were written")
    func messages() throws {
        let scrypt = FirebaseScrypt(signerKey: [1, 2, 3], saltSeparator: [4], rounds: 8, memCost: 14)
        let bytes = HashWorkerMessage.request(scrypt, password: "pässwörd", salt: [9, 8, 7])
        let (parsed, password, salt) = try #require(HashWorkerMessage.parse(bytes))
        #expect(parsed == scrypt && password == "pässwörd" && salt == [9, 8, 7])
        #expect(HashWorkerMessage.parse(Array(bytes.dropLast())) == nil)
        var badRounds = bytes
        badRounds[1] = 9
        #expect(HashWorkerMessage.parse(badRounds) == nil)
        let use = ThreadSchedule(onCPU: .milliseconds(42), waiting: .microseconds(7))
        let (hash, reported) = try #require(HashWorkerMessage.reply(HashWorkerMessage.reply(hash: [5, 6], use: use)))
        #expect(hash == [5, 6] && reported == use)
        #expect(HashWorkerMessage.reply(HashWorkerMessage.reply(hash: nil, use: nil)) == nil)
    }

    @Test("hashes in the worker are the directory's own, in a session and scheduling group of its own")
    func hashesInItsOwnGroup() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.executable), "build user-directory first")
        let worker = Self.worker()
        try worker.start()
        let process = try #require(worker.process)
        #expect(getsid(process.pid) == process.pid, "the worker leads a session of its own")
        #expect(getsid(process.pid) != getsid(0))
        if let enabled = try? String(contentsOfFile: "/proc/sys/kernel/sched_autogroup_enabled", encoding: .utf8),
            enabled.hasPrefix("1")
        {
            // The child sets it as it starts.
            var nice = process.groupNice
            for _ in 0..<100 where nice != 19 {
                try await Task.sleep(for: .milliseconds(10))
                nice = process.groupNice
            }
            #expect(nice == 19)
        }

        let pool = HashingPool(threads: 2, queueLength: 4)
        let isolated = PasswordHasher(pool: pool, rounds: 8, memCost: 10, worker: worker)
        let local = PasswordHasher(pool: pool, rounds: 8, memCost: 10)
        let stored = try await isolated.hash("correct horse", key: Self.key)
        #expect(try await local.verify("correct horse", stored: stored, keys: Self.keys))
        #expect(try await isolated.verify("correct horse", stored: stored, keys: Self.keys))
        #expect(try await !isolated.verify("wrong horse", stored: stored, keys: Self.keys))
        let madeHere = try await local.hash("battery staple", key: Self.key)
        #expect(try await isolated.verify("battery staple", stored: madeHere, keys: Self.keys))
        // The worker reports the hash's CPU time, which admission counts.
        #expect(pool.meanRunTime > .zero)

        // Concurrent hashes use both channels.
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<6 {
                group.addTask { try await isolated.verify("p\(index)", stored: stored, keys: Self.keys) }
            }
            for try await matched in group { #expect(!matched) }
        }

        worker.shutdown()
        #expect(kill(process.pid, 0) != 0, "the worker exited and was reaped")
        try await pool.shutdown()
    }

    @Test("a worker that dies answers 503 and is started again")
    func restartsAfterDeath() async throws {
        let worker = Self.worker()
        try worker.start()
        let first = try #require(worker.process)
        let pool = HashingPool(threads: 2, queueLength: 4)
        let hasher = PasswordHasher(pool: pool, rounds: 8, memCost: 10, worker: worker)
        _ = try await hasher.hash("before", key: Self.key)
        kill(first.pid, SIGKILL)
        do {
            _ = try await hasher.hash("during", key: Self.key)
            Issue.record("a hash succeeded with its worker dead")
        } catch let error as FirebaseError {
            #expect(error.status.code == 503)
        }
        #expect(worker.process == nil)
        try await Task.sleep(for: .milliseconds(1_100))
        let stored = try await hasher.hash("after", key: Self.key)
        let second = try #require(worker.process)
        #expect(second.pid != first.pid)
        #expect(try await hasher.verify("after", stored: stored, keys: Self.keys))
        worker.shutdown()
        try await pool.shutdown()
    }

    @Test("a worker that cannot join the cgroup it is given stops the start with an error")
    func cgroupItCannotJoin() throws {
        let worker = HashWorker(
            executable: Self.executable, channels: 1, groupNice: 19, cgroup: "/nonexistent/tessera-hash",
            priority: .idle, logger: nil)
        #expect(throws: HashWorkerError.self) { try worker.start() }
        #expect(worker.process == nil)
        worker.shutdown()
    }

    /// A cgroup this process may create for the test: cgroup v1's `cpu` hierarchy, or a v2 root that
    /// lets us make children (nil where neither, in most containers).
    static func scratchCgroup() -> String? {
        for parent in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup"]
        where FileManager.default.fileExists(atPath: parent + "/cgroup.procs") {
            let path = parent + "/tessera-test-\(getpid())"
            if mkdir(path, 0o755) == 0 { return path }
        }
        return nil
    }

    @Test("a worker given a cgroup runs in it", .enabled(if: getuid() == 0))
    func joinsItsCgroup() async throws {
        guard let cgroup = Self.scratchCgroup() else { return }  // no cgroup we may make here
        defer { rmdir(cgroup) }
        let worker = HashWorker(
            executable: Self.executable, channels: 1, groupNice: 19, cgroup: cgroup, priority: .idle, logger: nil)
        try worker.start()
        let process = try #require(worker.process)
        let name = "/" + URL(fileURLWithPath: cgroup).lastPathComponent
        let membership = try String(contentsOfFile: "/proc/\(process.pid)/cgroup", encoding: .utf8)
        #expect(membership.split(separator: "\n").contains { $0.hasSuffix(":" + name) }, "\(membership)")
        worker.shutdown()
    }

    @Test("a password too long for a channel is hashed in the directory, with the same result")
    func longPasswordStaysHere() async throws {
        let worker = Self.worker(groupNice: 0)
        let pool = HashingPool(threads: 1, queueLength: 1)
        let hasher = PasswordHasher(pool: pool, rounds: 8, memCost: 10, worker: worker)
        let long = String(repeating: "x", count: HelperChannel.maximumMessage)
        let stored = try await hasher.hash(long, key: Self.key)
        #expect(worker.process == nil, "no worker was needed")
        #expect(
            try await PasswordHasher(pool: pool, rounds: 8, memCost: 10).verify(long, stored: stored, keys: Self.keys))
        worker.shutdown()
        try await pool.shutdown()
    }
}
