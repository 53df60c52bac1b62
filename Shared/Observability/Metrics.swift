import Foundation
import Hummingbird
import Prometheus
import Synchronization

/// A service's Prometheus metrics, served at `GET /metrics` on the service's own port (the ingress
/// does not route it). Labels are bounded: route templates, methods, status codes, error codes,
/// providers — never ids or tenants.
public final class ServiceMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()

    /// The per-request series, looked up once per label set: asking the registry builds the metric's
    /// name and compares its labels every time, about 1% of a lookup's CPU. The label sets are
    /// bounded (route templates, methods, status codes; internal paths and outcomes).
    private struct RequestSeries: Hashable {
        var method: String
        var route: String
        var status: Int
    }
    private struct InternalCallSeries: Hashable {
        var path: String
        var outcome: String
    }
    private let requestSeries = Mutex<[RequestSeries: (Counter, DurationHistogram)]>([:])
    private let internalCallSeries = Mutex<[InternalCallSeries: DurationHistogram]>([:])
    private let process: ProcessMetrics
    private let inFlight = Atomic<Int>(0)
    private let inFlightGauge: Gauge
    private let scrapeHooks = Mutex<[@Sendable () async -> Void]>([])

    public init() {
        process = ProcessMetrics(registry: registry)
        inFlightGauge = registry.makeGauge(
            descriptor: Self.descriptor(
                "http_requests_in_flight", unit: "",
                help: "HTTP requests being answered now (until their handler returns)."))
    }

    /// A request entered the error middleware (`tessera_http_requests_in_flight`).
    public func requestStarted() { inFlightGauge.set(Double(inFlight.add(1, ordering: .relaxed).newValue)) }
    /// It left.
    public func requestEnded() { inFlightGauge.set(Double(inFlight.subtract(1, ordering: .relaxed).newValue)) }

    /// Runs `hook` before every scrape, for figures read when asked (the mail outbox's depth); it
    /// must bound its own time and swallow its own errors.
    public func onScrape(_ hook: @escaping @Sendable () async -> Void) {
        scrapeHooks.withLock { $0.append(hook) }
    }

    /// The series for `key`, made by `make` the first time (outside the lock; if two requests make
    /// it at once, the registry hands both the same series and the first one stored is kept).
    private static func series<Key: Hashable & Sendable, Series: Sendable>(
        in cache: borrowing Mutex<[Key: Series]>, _ key: Key, make: () -> Series
    ) -> Series {
        if let known = cache.withLock({ $0[key] }) { return known }
        let made = make()
        return cache.withLock { known in
            if let stored = known[key] { return stored }
            known[key] = made
            return made
        }
    }

    /// Latency buckets from half a millisecond to five seconds.
    public static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .seconds(2), .seconds(5),
    ]

    /// `tessera_<name>_<unit>`.
    static func descriptor(_ name: String, unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "tessera", metricName: name, unitName: unit, helpText: help)
    }

    public func counter(_ name: String, labels: [(String, String)] = [], help: String) -> Counter {
        registry.makeCounter(descriptor: Self.descriptor(name, unit: "total", help: help), labels: labels)
    }

    /// Adds one to a counter (for callers that do not import Prometheus).
    public func increment(_ name: String, labels: [(String, String)] = [], help: String) {
        counter(name, labels: labels, help: help).increment()
    }

    public func gauge(_ name: String, unit: String, labels: [(String, String)] = [], help: String) -> Gauge {
        registry.makeGauge(descriptor: Self.descriptor(name, unit: unit, help: help), labels: labels)
    }

    public func latency(_ name: String, labels: [(String, String)] = [], help: String) -> DurationHistogram {
        registry.makeDurationHistogram(
            descriptor: Self.descriptor(name, unit: "seconds", help: help), labels: labels,
            buckets: Self.latencyBuckets)
    }

    /// One answered HTTP request, by route template (`NotFound` for unknown paths).
    public func recordRequest(method: String, route: String, status: Int, errorCode: String?, duration: Duration) {
        let (requests, latencies) = Self.series(
            in: requestSeries, RequestSeries(method: method, route: route, status: status)
        ) {
            (
                counter(
                    "http_requests", labels: [("method", method), ("route", route), ("status", String(status))],
                    help: "HTTP requests answered, by route template and status."),
                latency(
                    "http_request_duration", labels: [("method", method), ("route", route)],
                    help: "Time to answer an HTTP request.")
            )
        }
        requests.increment()
        latencies.record(duration)
        if let errorCode {
            counter(
                "http_errors", labels: [("route", route), ("code", errorCode)],
                help: "Error answers by route and Firebase error code (sign-in failures by reason among them)."
            ).increment()
        }
    }

    /// One call to another Tessera service over the internal API.
    public func recordInternalCall(path: String, outcome: String, duration: Duration) {
        let histogram = Self.series(in: internalCallSeries, InternalCallSeries(path: path, outcome: outcome)) {
            latency(
                "internal_call_duration", labels: [("path", path), ("outcome", outcome)],
                help: "Latency of internal calls between the services, by path and outcome.")
        }
        histogram.record(duration)
    }

    /// The `/metrics` route.
    public func addRoute<Context: RequestContext>(to router: Router<Context>) {
        router.get("/metrics") { _, _ in
            self.process.update()
            let hooks = self.scrapeHooks.withLock { $0 }
            await withTaskGroup(of: Void.self) { group in
                for hook in hooks { group.addTask { await hook() } }
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.registry.emitToBuffer())))
        }
    }
}
