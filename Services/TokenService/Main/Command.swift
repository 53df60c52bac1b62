import ArgumentParser
import Foundation
import Hummingbird
import Logging
import ServiceCommand
import TesseraShared
import TokenService

@main
struct TokenServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token-service",
        abstract: "Tessera's token service: the end-user API, token issuance and the public keys.",
        version: TesseraVersion.current,
        subcommands: [Serve.self, Keys.self],
        defaultSubcommand: Serve.self)
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the end-user API.")
    @OptionGroup var options: ServeOptions

    func run() async throws {
        try await options.serve(
            "token-service", configuration: TokenServiceConfiguration.init(environment:),
            build: buildTokenApplication(configuration:logger:))
    }
}

extension TokenServiceConfiguration: ListenConfiguration {}

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the signing key directory.", subcommands: [Generate.self])

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new RSA signing key: published at once, signing after --lead.")
        @Option(
            help:
                "The key directory (default: TESSERA_SIGNING_KEYS_DIR; with --session-cookies, TESSERA_SESSION_COOKIE_KEYS_DIR or its session-cookies/)."
        ) var dir: String?
        @Option(help: "How long the key is published before it signs, e.g. 1h (0s: at once).") var lead: String = "0s"
        @Flag(help: "A key for session cookies, which have a key set of their own.") var sessionCookies = false

        func run() async throws {
            let env = ConfigReader()
            var directory = dir
            if directory == nil, sessionCookies {
                directory =
                    env.string("TESSERA_SESSION_COOKIE_KEYS_DIR")
                    ?? env.string("TESSERA_SIGNING_KEYS_DIR").map(
                        TokenServiceConfiguration.defaultSessionCookieKeysDirectory)
            }
            guard let directory = directory ?? env.string("TESSERA_SIGNING_KEYS_DIR") else {
                throw ValidationError("give --dir or set TESSERA_SIGNING_KEYS_DIR")
            }
            guard let lead = Duration.parse(lead) else { throw ValidationError("--lead must be a duration such as 1h") }
            let kid = try KeyDirectory.generate(into: directory, lead: lead)
            print(kid)
        }
    }
}
