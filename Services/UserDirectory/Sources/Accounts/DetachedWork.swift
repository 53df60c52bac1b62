import Synchronization

/// Work that goes on after the request that started it has been answered, bounded: past `limit`
/// pieces running, `admit` says no and the caller does the work before answering.
final class DetachedWork: Sendable {
    private let running = Atomic<Int>(0)
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    struct Ticket: Sendable {
        fileprivate let owner: DetachedWork
        func done() { owner.running.subtract(1, ordering: .relaxed) }
    }

    func admit() -> Ticket? {
        guard running.add(1, ordering: .relaxed).newValue <= limit else {
            running.subtract(1, ordering: .relaxed)
            return nil
        }
        return Ticket(owner: self)
    }
}
