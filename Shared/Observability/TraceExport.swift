import Foundation
import Hummingbird
import Logging
import OTel
import ServiceLifecycle
import Synchronization
import Tracing
import UnixSignals

/// OpenTelemetry tracing, off unless the operator turns it on with the standard
/// `OTEL_TRACES_EXPORTER` key (`otlp`; Tessera's default is `none`). The other standard
/// `OTEL_*` keys (endpoint, protocol, headers, sampler, batch settings, service name) are read by
/// swift-otel. Spans cover each HTTP request (route template as the name) and each internal call, and
/// the W3C `traceparent` header carries the trace from the token service and the worker into the
/// user-directory, so one sign-in is one trace across services.
public struct TraceExport: Sendable {
    /// Runs the batch processor and the exporter; stopped after the HTTP server so that the last
    /// spans are flushed.
    let service: any Service

    /// True once a process has bootstrapped a real tracer: HTTP servers add the tracing middleware
    /// and internal clients start spans only then, so tracing costs nothing when it is off.
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }
    private static let enabled = Atomic<Bool>(false)

    /// Bootstraps the process-wide tracer when `OTEL_TRACES_EXPORTER` asks for one; nil when tracing
    /// is off. Call once, before the application is built.
    public static func bootstrap(
        serviceName: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> TraceExport? {
        let exporter = environment["OTEL_TRACES_EXPORTER", default: "none"].lowercased()
        guard !exporter.isEmpty, exporter != "none" else { return nil }
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
        // swift-otel throws an unexplained error for its other exporters and stops the process
        // (fatalError) for OTLP over gRPC, which is not built in: refuse both with a clear message.
        guard exporter == "otlp" else {
            throw ConfigError.invalid(
                "OTEL_TRACES_EXPORTER", "'\(exporter)' is not supported; use otlp, or none (the default)")
        }
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            guard let value = environment[key]?.lowercased(), !value.isEmpty else { continue }
            guard ["http/protobuf", "http/json"].contains(value) else {
                throw ConfigError.invalid(
                    key, "'\(value)' is not supported; use http/protobuf (the default) or http/json (no gRPC exporter)")
            }
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        // Environment keys (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_*, …) override these defaults.
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        enabled.store(true, ordering: .relaxed)
        return TraceExport(service: service)
    }
}

extension Router {
    /// Adds the server-span middleware when tracing is on. The API key (`?key=`) is redacted from
    /// recorded URLs; no header is recorded.
    public func addTracingMiddleware() {
        guard TraceExport.isEnabled else { return }
        add(middleware: TracingMiddleware<Context>(recordingHeaders: [], redactingQueryParameters: ["key"]))
    }
}

extension ApplicationProtocol {
    /// Runs the application until SIGTERM or SIGINT. Graceful shutdown stops accepting connections,
    /// finishes the requests in flight, then stops the background services in reverse order; the
    /// trace exporter, when there is one, stops last and flushes. A shutdown that takes longer than
    /// `shutdownTimeout` cancels what is left, and a process still there 2 s later logs a line and
    /// exits with status 1 (`ShutdownWatchdog`), so an orchestrator's grace period is never exceeded.
    public func runUntilTerminated(
        tracing: TraceExport?, shutdownTimeout: Duration, logger: Logger
    ) async throws {
        var services: [any Service] = []
        if let tracing { services.append(tracing.service) }
        services.append(self)
        // Last, so the first told of a graceful shutdown: it times the whole of it.
        let watchdog = ShutdownWatchdog(allowance: shutdownTimeout + .seconds(2), logger: logger)
        services.append(watchdog)
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        configuration.maximumGracefulShutdownDuration = shutdownTimeout
        // No cancellation limit: past it ServiceLifecycle calls fatalError; the watchdog exits instead.
        configuration.maximumCancellationDuration = nil
        defer { watchdog.disarm() }
        try await ServiceGroup(configuration: configuration).run()
    }
}
