import CoreMetrics
import Hummingbird
import Prometheus
import Synchronization

/// What libraries record through swift-metrics (Hummingbird's `MetricsMiddleware`, and any other
/// library that reports through it) lands in the service's own registry, under Prometheus names:
/// `hb.requests` becomes `hb_requests_total`, `http.server.request.duration` becomes
/// `http_server_request_duration_seconds`. swift-metrics has one backend per process, so only the
/// first service built in a process (the one a binary serves) becomes it; tests that build several
/// in one process keep their own registries, without library metrics.
struct LibraryMetricsFactory: MetricsFactory {
    let prometheus: PrometheusMetricsFactory

    init(registry: PrometheusCollectorRegistry) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = ServiceMetrics.latencyBuckets
        prometheus = factory
    }

    /// A Prometheus name: characters other than letters, digits, `_` and `:` become `_`, and the
    /// unit suffix is added when missing.
    static func name(_ label: String, suffix: String) -> String {
        let name = plain(label)
        return name.hasSuffix("_" + suffix) ? name : name + "_" + suffix
    }

    static func labels(_ dimensions: [(String, String)]) -> [(String, String)] {
        dimensions.map { key, value in
            (String(key.map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" }), value)
        }
    }

    static func plain(_ label: String) -> String {
        let name = String(label.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ":") ? $0 : "_" })
        return name.first?.isNumber == true ? "_" + name : name
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        prometheus.makeCounter(label: Self.name(label, suffix: "total"), dimensions: Self.labels(dimensions))
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        prometheus.makeFloatingPointCounter(
            label: Self.name(label, suffix: "total"), dimensions: Self.labels(dimensions))
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        prometheus.makeRecorder(label: Self.plain(label), dimensions: Self.labels(dimensions), aggregate: aggregate)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        prometheus.makeMeter(label: Self.plain(label), dimensions: Self.labels(dimensions))
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        prometheus.makeTimer(label: Self.name(label, suffix: "seconds"), dimensions: Self.labels(dimensions))
    }

    func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        prometheus.destroyFloatingPointCounter(handler)
    }
    func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { prometheus.destroyTimer(handler) }
}

extension ServiceMetrics {
    /// Hummingbird's `MetricsMiddleware` (`hb_requests_total`, `hb_request_errors_total`,
    /// `http_server_request_duration_seconds`, `http_server_active_requests`), when `enabled`
    /// (`TESSERA_HTTP_LIBRARY_METRICS`). Off by default: the service's own series
    /// (`tessera_http_*`) count the same requests, and the middleware cost 5–10% of an
    /// `accounts:lookup`'s server CPU in the benchmark (it wraps every response body to time it).
    public func addLibraryRequestMetrics<Context: RequestContext>(to router: Router<Context>, if enabled: Bool) {
        if enabled { router.add(middleware: MetricsMiddleware()) }
    }

    private static let libraryBackendTaken = Atomic<Bool>(false)

    /// Makes this registry the process's swift-metrics backend, unless another one already is.
    /// Returns whether it did.
    @discardableResult
    public func collectLibraryMetrics() -> Bool {
        guard Self.libraryBackendTaken.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return false }
        MetricsSystem.bootstrap(LibraryMetricsFactory(registry: registry))
        return true
    }
}
