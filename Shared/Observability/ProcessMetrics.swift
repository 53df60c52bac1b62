import Foundation
import Prometheus

#if canImport(Glibc)
    import Glibc
#endif

/// The process's own figures under the names Prometheus' client libraries use (`process_*`), read
/// from `/proc/self` when `/metrics` is scraped: CPU time, resident and virtual memory, open and
/// allowed file descriptors, start time. Elsewhere than Linux the gauges stay at zero.
final class ProcessMetrics: Sendable {
    let cpu: Gauge
    let resident: Gauge
    let virtual: Gauge
    let openFDs: Gauge
    let maxFDs: Gauge
    let startTime: Gauge

    init(registry: PrometheusCollectorRegistry) {
        // CPU seconds is a counter to Prometheus; it is set from the kernel's figure, so it is kept
        // as a gauge here and named like the counter it is (rate() works on it the same way).
        cpu = registry.makeGauge(name: "process_cpu_seconds_total", help: "User and system CPU time spent, in seconds.")
        resident = registry.makeGauge(name: "process_resident_memory_bytes", help: "Resident memory size in bytes.")
        virtual = registry.makeGauge(name: "process_virtual_memory_bytes", help: "Virtual memory size in bytes.")
        openFDs = registry.makeGauge(name: "process_open_fds", help: "Open file descriptors.")
        maxFDs = registry.makeGauge(name: "process_max_fds", help: "The limit of open file descriptors.")
        startTime = registry.makeGauge(
            name: "process_start_time_seconds", help: "Start time of the process since the Unix epoch, in seconds.")
        update()
    }

    func update() {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                let fields = Self.statFields(stat)
            else { return }
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            let page = Double(sysconf(Int32(_SC_PAGESIZE)))
            // Fields after the command name, from the state (field 3 of proc(5)): utime is 14, stime
            // 15, starttime 22, vsize 23, rss 24.
            func field(_ number: Int) -> Double { Double(fields[number - 3]) ?? 0 }
            cpu.set((field(14) + field(15)) / ticks)
            virtual.set(field(23))
            resident.set(field(24) * page)
            if let boot = Self.bootTime { startTime.set(boot + field(22) / ticks) }
            if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
                openFDs.set(Double(entries.count))
            }
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.set(Double(limit.rlim_cur)) }
        #endif
    }

    /// The fields of `/proc/self/stat` after `(comm)`, which may itself hold spaces and parentheses.
    static func statFields(_ stat: String) -> [Substring]? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count >= 22 ? fields : nil
    }

    /// The boot time (`btime` of `/proc/stat`), in seconds since the epoch.
    static let bootTime: Double? = {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }()
}
