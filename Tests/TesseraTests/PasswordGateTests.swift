import Foundation
import HTTPTypes
import Synchronization
import Testing

@testable import TesseraShared
@testable import TokenService

@Suite("the token service's password gate")
struct PasswordGateTests {
    /// Counts the calls that reached "the directory".
    final class Calls: Sendable {
        private let count = Atomic<Int>(0)
        func note() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    static func refuse(_ calls: Calls, retryAfter: Int = 3) throws -> Int {
        calls.note()
        throw FirebaseError.unavailable("no room", retryAfterSeconds: retryAfter)
    }

    @Test("after the directory refused an address, its next sign-ins are refused without a call, for the window only")
    func closesPerAddress() async throws {
        let gate = PasswordGate(window: .milliseconds(300))
        let calls = Calls()
        await #expect(throws: FirebaseError.self) { try await gate.pass("192.0.2.1") { _ in try Self.refuse(calls) } }
        // Closed for that address: the same 503, with the directory's Retry-After, and no call.
        do {
            _ = try await gate.pass("192.0.2.1") { _ in try Self.refuse(calls) }
            Issue.record("the gate let the call through")
        } catch let error as FirebaseError {
            #expect(error.status.code == 503 && error.retryAfterSeconds == 3)
        }
        #expect(calls.value == 1)
        // Another address, and a request with none, still reach the directory.
        // The first call that passes tells the directory of the gate's refusal; the next, of none.
        #expect(
            try await gate.pass("198.51.100.7") { refusedByGate in
                calls.note(); return refusedByGate
            } == 1)
        #expect(
            try await gate.pass(nil) { refusedByGate in
                calls.note(); return refusedByGate
            } == 0)
        #expect(calls.value == 3)
        // Past the window the address is let through again; a success closes nothing.
        try await Task.sleep(for: .milliseconds(350))
        #expect(
            try await gate.pass("192.0.2.1") { _ in
                calls.note(); return 9
            } == 9)
        #expect(calls.value == 4 && gate.count == 0)
    }

    @Test("only a 503 closes the gate: a 400 is the answer to that request alone")
    func onlyUnavailableCloses() async throws {
        let gate = PasswordGate(window: .seconds(5))
        let calls = Calls()
        await #expect(throws: FirebaseError.self) {
            try await gate.pass("192.0.2.1") { (_: Int) throws -> Int in
                calls.note()
                throw FirebaseError.invalid(.invalidPassword)
            }
        }
        #expect(
            try await gate.pass("192.0.2.1") { _ in
                calls.note(); return 1
            } == 1)
        #expect(calls.value == 2)
    }

    @Test("the addresses remembered stay bounded")
    func bounded() async throws {
        let gate = PasswordGate(window: .seconds(5), maximumAddresses: 8)
        let calls = Calls()
        for i in 0..<20 {
            await #expect(throws: FirebaseError.self) {
                try await gate.pass("192.0.2.\(i)") { _ in try Self.refuse(calls) }
            }
            #expect(gate.count <= 8)
        }
        #expect(calls.value == 20)
    }
}
