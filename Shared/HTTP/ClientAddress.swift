import Foundation

/// The end user's IP address behind trusted proxies (issue #7): the peer address, unless the peer is
/// a trusted proxy, in which case `X-Forwarded-For` is read from the right, skipping trusted hops —
/// the first untrusted address is the client. Addresses a client writes into the header itself sit
/// left of what the proxies appended and are never reached while a proxy is trusted.
public struct ClientAddress: Sendable {
    public let trusted: [CIDR]

    public init(trusted: [CIDR]) {
        self.trusted = trusted
    }

    /// `TESSERA_TRUSTED_PROXIES`: comma-separated addresses or CIDR blocks; empty trusts none.
    public init(parsing list: String) throws {
        trusted = try list.split(separator: ",").map { item in
            let text = item.trimmingCharacters(in: .whitespaces)
            guard let cidr = CIDR(text) else { throw ConfigError.invalid("TESSERA_TRUSTED_PROXIES", text) }
            return cidr
        }
    }

    /// The default (issue #23): no proxy is believed, so a client that reaches a service directly
    /// cannot choose its address with `X-Forwarded-For`. Deployments name their ingress.
    public static let none = ClientAddress(trusted: [])

    public func isTrusted(_ address: String) -> Bool {
        guard let bytes = CIDR.bytes(address) else { return false }
        return trusted.contains { $0.contains(bytes) }
    }

    public func resolve(peer: String?, forwardedFor: String?) -> String? {
        guard let peer else { return nil }
        guard isTrusted(peer), let forwardedFor else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard CIDR.bytes(hop) != nil else { return peer }  // junk: trust nothing beyond the peer
            if !isTrusted(hop) { return hop }
        }
        return hops.first ?? peer
    }
}

/// An IPv4 or IPv6 block.
public struct CIDR: Sendable, Equatable {
    let network: [UInt8]
    let prefix: Int

    /// `keepingMapped`: an IPv4-mapped IPv6 network (`::ffff:0:0/96`) stays 16 bytes instead of
    /// becoming the IPv4 network it maps.
    public init?(_ text: String, keepingMapped: Bool = false) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let address = keepingMapped ? Self.rawBytes(String(parts[0])) : Self.bytes(String(parts[0])) else {
            return nil
        }
        let bits = address.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : bits
        guard let prefix, (0...bits).contains(prefix) else { return nil }
        network = address
        self.prefix = prefix
    }

    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = prefix
        for (a, n) in zip(address, network) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != n & mask { return false }
            remaining -= 8
        }
        return true
    }

    /// The 4 or 16 bytes of an address (IPv4-mapped IPv6 addresses count as IPv4).
    public static func bytes(_ text: String) -> [UInt8]? {
        rawBytes(text).map(unmapped)
    }

    /// The 4 or 16 bytes of an address as written.
    static func rawBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        return withUnsafeBytes(of: &v6) { Array($0) }
    }
}

extension CIDR {
    /// The 4 or 16 bytes of an address in text form, IPv4-mapped IPv6 as IPv4; nil if not an address.
    public static func addressBytes(_ text: String) -> [UInt8]? { bytes(text) }

    public func contains(address bytes: [UInt8]) -> Bool { contains(bytes) }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the 4 bytes of the IPv4 address it is;
    /// any other address as it is.
    public static func unmapped(_ raw: [UInt8]) -> [UInt8] {
        raw.count == 16 && raw.prefix(10).allSatisfy { $0 == 0 } && raw[10] == 0xFF && raw[11] == 0xFF
            ? Array(raw.suffix(4)) : raw
    }

    /// Blocks no request to an outside party (an identity provider a tenant configures) may reach
    /// (issue #23): this host, private networks, link-local (cloud metadata at 169.254.169.254 and
    /// fd00:ec2::254 among them), shared address space, and addresses that are not unicast. IPv6
    /// forms that carry an IPv4 address are blocked whole (issue #35): IPv4-compatible (`::/96`),
    /// IPv4-mapped (`::ffff:0:0/96`, also checked as the IPv4 address they map), Teredo
    /// (`2001::/32`), NAT64 and 6to4.
    public static let nonPublic: [CIDR] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "::/96", "::ffff:0:0/96", "64:ff9b::/96",
        "64:ff9b:1::/48", "100::/64", "2001::/32", "2001:db8::/32", "2002::/16", "fc00::/7", "fe80::/10",
        "fec0::/10", "ff00::/8",
    ].map { CIDR($0, keepingMapped: true)! }

    /// Whether an address (4 or 16 bytes) is outside every `nonPublic` block.
    public static func isPublic(_ bytes: [UInt8]) -> Bool {
        !nonPublic.contains { $0.contains(bytes) }
    }
}
