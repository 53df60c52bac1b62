import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import TesseraShared

private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}

/// Holds on through cancellation until told to stop: a service whose shutdown overruns.
private struct StubbornService: Service {
    let release = Flag()

    func run() async throws {
        try? await gracefulShutdown()
        // Cancellation is ignored: only `release` ends it.
        while !release.isSet { try? await Task.sleep(for: .milliseconds(20)) }
    }
}

/// Stops as soon as it is asked to.
private struct PoliteService: Service {
    func run() async throws { try? await gracefulShutdown() }
}

@Suite("Shutdown watchdog")
struct ShutdownWatchdogTests {
    /// As `runUntilTerminated` builds it: the watchdog last, no cancellation limit, disarmed at the end.
    static func group(
        _ first: any Service, allowance: Duration = .milliseconds(300), overrun: @escaping @Sendable () -> Void
    ) -> (ServiceGroup, ShutdownWatchdog) {
        let logger = Logger(label: "watchdog-test")
        let watchdog = ShutdownWatchdog(allowance: allowance, logger: logger, overrun: overrun)
        var configuration = ServiceGroupConfiguration(
            services: [.init(service: first), .init(service: watchdog)], logger: logger)
        configuration.maximumGracefulShutdownDuration = .milliseconds(100)
        configuration.maximumCancellationDuration = nil
        return (ServiceGroup(configuration: configuration), watchdog)
    }

    @Test("a shutdown that overruns the allowance ends the process (overrun), instead of ServiceLifecycle's fatalError")
    func overrunFires() async throws {
        let fired = Flag()
        let stubborn = StubbornService()
        let (group, watchdog) = Self.group(stubborn) { fired.set() }
        let running = Task {
            defer { watchdog.disarm() }
            try await group.run()
        }
        try await Task.sleep(for: .milliseconds(50))
        await group.triggerGracefulShutdown()
        // 300 ms after the shutdown began; a busy test run may take a while longer to get there.
        let deadline = ContinuousClock.now + .seconds(10)
        while !fired.isSet && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(fired.isSet)
        stubborn.release.set()
        _ = try? await running.value
    }

    @Test("a shutdown within the allowance leaves the watchdog silent")
    func inTimeIsSilent() async throws {
        let fired = Flag()
        // A second's allowance: the group's own shutdown must fit in it even in a busy test run (with
        // 300 ms it once did not, and the watchdog rightly fired).
        let (group, watchdog) = Self.group(PoliteService(), allowance: .seconds(1)) { fired.set() }
        let running = Task {
            defer { watchdog.disarm() }
            try await group.run()
        }
        try await Task.sleep(for: .milliseconds(50))
        await group.triggerGracefulShutdown()
        try await running.value
        try await Task.sleep(for: .milliseconds(1500))  // past the allowance: a clock not stopped would fire
        #expect(!fired.isSet)
    }
}
