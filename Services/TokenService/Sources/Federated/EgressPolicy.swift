import Foundation
import Logging
import NIOPosix
import TesseraShared

/// Where the token service may connect on a tenant's behalf (issue #23). A tenant's OIDC provider
/// names its issuer, and the issuer's discovery document names its keys' URL: both are the tenant's
/// to write, so without a check a tenant could make the token service probe this host, the private
/// network or a cloud metadata endpoint. Every address the name resolves to must be public unless
/// the operator allows it (`TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES`); the connection then goes to
/// the address that was checked, not to a second lookup. Redirects are never followed.
struct EgressPolicy: Sendable {
    /// An allowed block, optionally for one port only.
    struct Allowance: Sendable, Equatable {
        var block: CIDR
        var port: Int?
    }

    let allowed: [Allowance]

    static let open = EgressPolicy(allowed: [])

    /// Comma-separated CIDR blocks (`10.1.0.0/16`), addresses (`127.0.0.1`) or an address with a
    /// port (`127.0.0.1:8080`, `[::1]:8080`).
    init(parsing text: String) throws {
        allowed = try text.split(separator: ",").map { item in
            let entry = item.trimmingCharacters(in: .whitespaces)
            if let block = CIDR(entry) { return Allowance(block: block, port: nil) }
            let hasPort = entry.hasPrefix("[") ? entry.contains("]:") : entry.contains(":")
            if hasPort, let url = WebURL.authority(ofHostHeader: entry),
                let block = CIDR(url.hostString.trimmingCharacters(in: CharacterSet(charactersIn: "[]")))
            {
                return Allowance(block: block, port: url.effectivePort)
            }
            throw ConfigError.invalid("TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES", entry)
        }
    }

    init(allowed: [Allowance]) {
        self.allowed = allowed
    }

    func permits(_ address: [UInt8], port: Int) -> Bool {
        CIDR.isPublic(address) || isAllowed(address, port: port)
    }

    func isAllowed(_ address: [UInt8], port: Int) -> Bool {
        allowed.contains { $0.block.contains(address: address) && ($0.port == nil || $0.port == port) }
    }

    /// Plain http goes only to addresses the operator allowed (a development provider beside the
    /// stack); a tenant's provider anywhere else uses https.
    func allowsPlainHTTP(_ url: WebURL) async -> Bool {
        guard let addresses = try? await Self.addresses(of: url), !addresses.isEmpty else { return false }
        return addresses.allSatisfy { isAllowed($0, port: url.effectivePort) }
    }

    /// The host's addresses, IPv4-mapped IPv6 ones (`[::ffff:127.0.0.1]`) as the IPv4 addresses
    /// they are.
    static func addresses(of url: WebURL) async throws -> [[UInt8]] {
        switch url.host {
        case .ipv4(let bytes): return [bytes]
        case .ipv6(let bytes): return [CIDR.unmapped(bytes)]
        case .domain(let name): return try await resolve(name)
        }
    }

    /// The address to connect to for `url`, after checking every address its host has; throws
    /// `INVALID_IDP_RESPONSE` — the same answer whether anything listens there or not.
    func address(for url: WebURL, logger: Logger) async throws -> String {
        let addresses = try await Self.addresses(of: url)
        guard !addresses.isEmpty else {
            // A name that does not resolve (now): a provider that cannot be reached, as before the check.
            logger.warning("identity provider name does not resolve", metadata: ["idp.host": .string(url.hostString)])
            throw FirebaseError.unavailable("The identity provider could not be reached; retry shortly.")
        }
        guard let first = addresses.first,
            addresses.allSatisfy({ permits($0, port: url.effectivePort) })
        else {
            logger.warning(
                "identity provider address refused: not a public address (TESSERA_IDP_ALLOWED_PRIVATE_ADDRESSES)",
                metadata: ["idp.host": .string(url.hostString), "idp.port": "\(url.effectivePort)"])
            throw IdentityProviders.invalid("The identity provider's address is not one Tessera connects to.")
        }
        return Self.text(first)
    }

    /// The host's addresses (getaddrinfo, on a thread of its own: it blocks).
    static func resolve(_ name: String) async throws -> [[UInt8]] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(name, nil, &hints, &list) == 0, let list else { return [] }
            defer { freeaddrinfo(list) }
            var found: [[UInt8]] = []
            var entry: UnsafeMutablePointer<addrinfo>? = list
            while let current = entry {
                if let address = current.pointee.ai_addr {
                    switch Int32(current.pointee.ai_family) {
                    case AF_INET:
                        var v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                        found.append(withUnsafeBytes(of: &v4) { Array($0) })
                    case AF_INET6:
                        var v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                        found.append(CIDR.unmapped(withUnsafeBytes(of: &v6) { Array($0) }))
                    default: break
                    }
                }
                entry = current.pointee.ai_next
            }
            return found
        }
    }

    static func text(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        return WebURL.ipv6String(bytes)
    }
}
