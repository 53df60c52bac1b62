// swift-tools-version: 6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// A product of a dependency, `"Name"` or `"Name@package"` when the package's name differs.
func products(_ names: String...) -> [Target.Dependency] {
    names.map { entry in
        let parts = entry.split(separator: "@").map(String.init)
        return .product(name: parts[0], package: parts.count > 1 ? parts[1] : parts[0].lowercased())
    }
}

/// A service (issue #24): its library at `Services/<name>/Sources`, which the tests link, and its
/// executable `<name>Main` at `Services/<name>/Main`, which adds only the command line.
func service(_ name: String, dependencies: [Target.Dependency], resources: [Resource]? = nil) -> [Target] {
    [
        .target(
            name: name, dependencies: ["TesseraShared"] + dependencies, path: "Services/\(name)/Sources",
            resources: resources, swiftSettings: swiftSettings),
        .executableTarget(
            name: name + "Main",
            dependencies: [.target(name: name), "TesseraShared", "ServiceCommand"]
                + products("ArgumentParser@swift-argument-parser"),
            path: "Services/\(name)/Main", swiftSettings: swiftSettings),
    ]
}

let package = Package(
    name: "tessera",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "token-service", targets: ["TokenServiceMain"]),
        .executable(name: "user-directory", targets: ["UserDirectoryMain"]),
        .executable(name: "cleanup-worker", targets: ["CleanupWorkerMain"]),
        .executable(name: "tessera", targets: ["TesseraCLI"]),
        .executable(name: "tessera-bench", targets: ["BenchTool"]),
        .executable(name: "tessera-floor", targets: ["BenchFloor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-service-context.git", from: "1.0.0"),
        // OTLP over HTTP only: the gRPC exporter would add grpc-swift to every build.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // RS256 signing by the system's OpenSSL 3 (libcrypto; Debian's libssl-dev to build).
        .target(
            name: "COpenSSLRSA",
            path: "Native/COpenSSLRSA",
            linkerSettings: [.linkedLibrary("crypto")]
        ),
        // E.164 phone numbers by the system's libphonenumber, a C++ library behind a C interface
        // (Debian's libphonenumber-dev to build, libphonenumber8 to run; docs/design-notes.md#phone-numbers).
        .target(
            name: "CPhoneNumber",
            path: "Native/CPhoneNumber",
            linkerSettings: [.linkedLibrary("phonenumber")]
        ),
        // The Swift Concurrency hook NIO's event-loop executor needs, reached through the linker
        // (see Shared/Config/TaskExecutor.swift).
        .target(name: "CTesseraRuntime", path: "Native/CTesseraRuntime"),
        .target(
            name: "TesseraShared",
            dependencies: [
                "COpenSSLRSA",
                "CPhoneNumber",
                "CTesseraRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "ServiceContextModule", package: "swift-service-context"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Shared",
            swiftSettings: swiftSettings
        ),
        // What the three executables share: `serve` and its options (ArgumentParser stays out of the libraries).
        .target(
            name: "ServiceCommand",
            dependencies: ["TesseraShared"]
                + products("ArgumentParser@swift-argument-parser", "Hummingbird", "Logging@swift-log"),
            path: "Services/Command",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "TesseraConsole",
            dependencies: ["TesseraShared"]
                + products("Hummingbird", "Mustache@swift-mustache", "HTTPTypes@swift-http-types", "NIOCore@swift-nio"),
            path: "Services/Console/Sources",
            resources: [.embedInCode("Templates"), .embedInCode("Assets")],
            swiftSettings: swiftSettings
        ),
    ]
        + service(
            "UserDirectory",
            dependencies: products(
                "Hummingbird", "PostgresNIO@postgres-nio", "Crypto@swift-crypto", "_CryptoExtras@swift-crypto",
                "ServiceLifecycle@swift-service-lifecycle", "Logging@swift-log", "HTTPTypes@swift-http-types",
                "NIOCore@swift-nio", "NIOPosix@swift-nio", "NIOSSL@swift-nio-ssl", "HummingbirdBcrypt@hummingbird-auth",
                "Prometheus@swift-prometheus", "Mustache@swift-mustache", "AsyncHTTPClient@async-http-client",
                "NIOHTTP1@swift-nio") + ["TesseraConsole"])
        + service(
            "TokenService",
            dependencies: products(
                "Hummingbird", "Crypto@swift-crypto", "_CryptoExtras@swift-crypto", "X509@swift-certificates",
                "SwiftASN1@swift-asn1", "AsyncHTTPClient@async-http-client", "ServiceLifecycle@swift-service-lifecycle",
                "Logging@swift-log", "HTTPTypes@swift-http-types", "Prometheus@swift-prometheus"),
            resources: [.copy("Resources/openapi.yaml")])
        + service(
            "CleanupWorker",
            dependencies: products(
                "Hummingbird", "AsyncHTTPClient@async-http-client", "ServiceLifecycle@swift-service-lifecycle",
                "Logging@swift-log", "Prometheus@swift-prometheus", "NIOCore@swift-nio"))
        + [
            // `tessera`, the operators' command line (issue 27): the admin API over HTTP, export and
            // import, and the signing-key directory.
            .executableTarget(
                name: "TesseraCLI",
                dependencies: ["TesseraShared", "TokenService"]
                    + products(
                        "ArgumentParser@swift-argument-parser", "AsyncHTTPClient@async-http-client",
                        "NIOCore@swift-nio", "NIOHTTP1@swift-nio", "Logging@swift-log"),
                path: "Services/AdminCLI",
                swiftSettings: swiftSettings
            ),
            .executableTarget(
                name: "BenchTool",
                dependencies: [
                    "UserDirectory", "TesseraShared",
                    .product(name: "ArgumentParser", package: "swift-argument-parser"),
                    .product(name: "Crypto", package: "swift-crypto"),
                    .product(name: "_CryptoExtras", package: "swift-crypto"),
                ],
                path: "Benchmarks/Tool",
                swiftSettings: swiftSettings
            ),
            .executableTarget(
                name: "BenchFloor",
                dependencies: [
                    .product(name: "Hummingbird", package: "hummingbird"),
                    .product(name: "PostgresNIO", package: "postgres-nio"),
                    .product(name: "Crypto", package: "swift-crypto"),
                    .product(name: "_CryptoExtras", package: "swift-crypto"),
                    .product(name: "Logging", package: "swift-log"),
                    .product(name: "NIOPosix", package: "swift-nio"),
                ],
                path: "Benchmarks/Floor",
                swiftSettings: swiftSettings
            ),
            .testTarget(
                name: "TesseraTests",
                dependencies: [
                    "TesseraShared", "TesseraConsole", "UserDirectory", "TokenService", "CleanupWorker",
                    .product(name: "HummingbirdTesting", package: "hummingbird"),
                    .product(name: "JWTKit", package: "jwt-kit"),
                    .product(name: "PostgresNIO", package: "postgres-nio"),
                    .product(name: "HTTPTypes", package: "swift-http-types"),
                    .product(name: "Crypto", package: "swift-crypto"),
                    .product(name: "_CryptoExtras", package: "swift-crypto"),
                    .product(name: "Prometheus", package: "swift-prometheus"),
                    .product(name: "CoreMetrics", package: "swift-metrics"),
                    .product(name: "AsyncHTTPClient", package: "async-http-client"),
                ],
                path: "Tests/TesseraTests",
                // The console's golden pages (ConsoleSnapshotTests), read from the source tree.
                exclude: ["ConsoleSnapshots"],
                swiftSettings: swiftSettings
            ),
        ]
)
