import CTesseraRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// A child process of a service's own executable, in a session of its own, that the service talks to
/// over socket pairs (one per channel, `SOCK_SEQPACKET`: each send is one message). The directory
/// runs its password hashing in one (`TESSERA_HASH_ISOLATION=process`): in a session of its own the
/// child is a scheduling group of its own, whose weight the kernel sets apart from the service's
/// (docs/scaling.md, "Login storms").
///
/// The child gets the channels as descriptors 3, 4, …, and no other descriptor of the service's (the
/// service's ends are close-on-exec), so when the service exits, however it exits, the kernel closes
/// them and the child reads the end of the stream: it should then exit.
public final class HelperProcess: Sendable {
    public let pid: Int32
    /// The service's ends of the channels, in the child's order.
    public let channels: [Int32]

    private init(pid: Int32, channels: [Int32]) {
        self.pid = pid
        self.channels = channels
    }

    /// Starts `executable` with `arguments` and `channels` channels.
    public static func start(executable: String, arguments: [String], channels count: Int) throws -> HelperProcess {
        var ours: [Int32] = []
        var theirs: [Int32] = []
        defer { for fd in theirs { close(fd) } }
        do {
            for _ in 0..<count {
                var pair: [Int32] = [-1, -1]
                guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0
                else { throw HelperProcessError.system("socketpair", errno) }
                ours.append(pair[0])
                theirs.append(pair[1])
            }
            var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) }
            argv.append(nil)
            defer { for pointer in argv { free(pointer) } }
            var pid: Int32 = 0
            let result = theirs.withUnsafeBufferPointer { fds in
                tessera_spawn_in_own_session(executable, argv, fds.baseAddress!, Int32(count), &pid)
            }
            guard result == 0 else { throw HelperProcessError.system("posix_spawn \(executable)", result) }
            return HelperProcess(pid: pid, channels: ours)
        } catch {
            for fd in ours { close(fd) }
            throw error
        }
    }

    /// Kills the child (SIGKILL) and reaps it. The channels stay open: a thread may be in a call on
    /// one (it then reads the end of the stream); whoever holds a channel closes it.
    public func kill() {
        _ = Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }

    /// Waits for the child to exit (its channels closed, it should) and reaps it, killing it if it has
    /// not exited within `grace`.
    public func reap(killingAfter grace: Duration) {
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while ContinuousClock.now < deadline {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { return }
            usleep(10_000)
        }
        kill()
    }

    /// The nice value of the child's scheduling group (its autogroup), or nil where unknown.
    public var groupNice: Int? {
        let nice = tessera_autogroup_nice(pid)
        return nice == -100 ? nil : Int(nice)
    }

    /// What a child calls on itself.
    public enum Child {
        /// Sets this process's scheduling group's nice value (0 to 19); false if the system refused.
        public static func setGroupNice(_ nice: Int) -> Bool { tessera_set_autogroup_nice(Int32(nice)) == 0 }

        /// Moves this process into the cgroup at `directory` (its `cgroup.procs`).
        public static func join(cgroup directory: String) throws {
            let path = directory.hasSuffix("/") ? directory + "cgroup.procs" : directory + "/cgroup.procs"
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw HelperProcessError.system("open \(path)", errno) }
            defer { close(fd) }
            let text = Array("\(getpid())\n".utf8)
            guard write(fd, text, text.count) == text.count else {
                throw HelperProcessError.system("write \(path)", errno)
            }
        }
    }
}

public enum HelperProcessError: Error, CustomStringConvertible {
    case system(String, Int32)
    case closed
    case tooLarge(Int)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .closed: "the helper process closed the channel"
        case .tooLarge(let size): "a message of \(size) bytes is larger than a channel carries"
        }
    }
}

/// One end of a helper process's channel: blocking sends and receives of whole messages.
public struct HelperChannel: Sendable {
    public let fd: Int32
    /// The largest message either side sends.
    public static let maximumMessage = 60 * 1024

    public init(fd: Int32) { self.fd = fd }

    /// Gives up a receive after `timeout` (a hash that never answers).
    public func setReceiveTimeout(_ timeout: Duration) {
        var value = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ message: [UInt8]) throws {
        guard message.count <= Self.maximumMessage else { throw HelperProcessError.tooLarge(message.count) }
        while true {
            let sent = message.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent == message.count { return }
            if sent < 0, errno == EINTR { continue }
            throw sent < 0 ? HelperProcessError.system("send", errno) : HelperProcessError.closed
        }
    }

    /// The next message; `HelperProcessError.closed` at the end of the stream.
    public func receive() throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: Self.maximumMessage)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return Array(buffer[0..<count]) }
            if count == 0 { throw HelperProcessError.closed }
            if errno == EINTR { continue }
            throw HelperProcessError.system("recv", errno)
        }
    }
}
