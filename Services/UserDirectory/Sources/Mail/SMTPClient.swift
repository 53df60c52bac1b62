import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Where and how mail is sent: `smtp://[user:password@]host[:port]` (STARTTLS when the server
/// offers it; port 25 by default) or `smtps://…` (TLS from the first byte; port 465).
public struct SMTPConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var implicitTLS: Bool
    public var username: String?
    public var password: String?
    /// The envelope and `From:` address.
    public var from: String
    /// PEM file of CA certificates to trust in addition to the system's (a private relay).
    public var caFile: String?
    public var timeout: Duration = .seconds(30)

    public init(url: String, from: String, caFile: String? = nil) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "smtp" || scheme == "smtps", let host = components.host, !host.isEmpty
        else { throw SMTPError.configuration("SMTP_URL must look like smtp://[user:password@]host[:port]") }
        self.host = host
        self.implicitTLS = scheme == "smtps"
        self.port = components.port ?? (implicitTLS ? 465 : 25)
        self.username = components.user?.removingPercentEncoding
        self.password = components.password?.removingPercentEncoding
        self.from = from
        self.caFile = caFile
    }
}

public struct MailMessage: Sendable, Equatable {
    public var to: String
    public var subject: String
    public var body: String

    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

public enum SMTPError: Error, CustomStringConvertible {
    case configuration(String)
    case reply(stage: String, code: Int, text: String)
    case protocolViolation(String)
    case timeout

    public var description: String {
        switch self {
        case .configuration(let why): "SMTP configuration: \(why)"
        case .reply(let stage, let code, let text): "SMTP \(stage) answered \(code) \(text.prefix(200))"
        case .protocolViolation(let why): "SMTP protocol: \(why)"
        case .timeout: "SMTP timed out"
        }
    }

    /// 5xx answers are permanent (the server will never accept this mail as it is).
    public var isPermanent: Bool {
        if case .reply(let stage, let code, _) = self { return code >= 500 && stage != "connect" }
        return false
    }
}

/// A minimal, real SMTP client (RFC 5321): EHLO, STARTTLS when offered, AUTH PLAIN or LOGIN when
/// configured, MAIL FROM / RCPT TO / DATA with dot-stuffing, QUIT. One connection per message.
public struct SMTPClient: Sendable {
    let configuration: SMTPConfiguration
    let group: any EventLoopGroup

    public init(configuration: SMTPConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.configuration = configuration
        self.group = group
    }

    struct Reply {
        var code: Int
        var lines: [String]
        var text: String { lines.joined(separator: " ") }
    }

    public func send(_ message: MailMessage, logger: Logger) async throws {
        let timeout = configuration.timeout
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.deliver(message, logger: logger) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw SMTPError.timeout
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    func tlsContext() throws -> NIOSSLContext {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = configuration.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        return try NIOSSLContext(configuration: tls)
    }

    private func deliver(_ message: MailMessage, logger: Logger) async throws {
        let configuration = self.configuration
        let implicitContext = configuration.implicitTLS ? try tlsContext() : nil
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .connect(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let implicitContext {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: implicitContext, serverHostname: configuration.host))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPLineDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()
            func reply(_ stage: String, expect: Set<Int>) async throws -> Reply {
                var collected: [String] = []
                while true {
                    guard let buffer = try await lines.next() else {
                        throw SMTPError.protocolViolation("connection closed during \(stage)")
                    }
                    let line = String(buffer: buffer)
                    guard line.count >= 3, let code = Int(line.prefix(3)) else {
                        throw SMTPError.protocolViolation("malformed reply during \(stage)")
                    }
                    collected.append(String(line.dropFirst(4)))
                    if line.count == 3 || line[line.index(line.startIndex, offsetBy: 3)] == " " {
                        let answer = Reply(code: code, lines: collected)
                        guard expect.contains(code) else {
                            throw SMTPError.reply(stage: stage, code: code, text: answer.text)
                        }
                        return answer
                    }
                }
            }
            func command(_ text: String, _ stage: String, expect: Set<Int>) async throws -> Reply {
                try await outbound.write(ByteBuffer(string: text + "\r\n"))
                return try await reply(stage, expect: expect)
            }

            _ = try await reply("connect", expect: [220])
            let hello = "tessera.local"
            var ehlo = try await command("EHLO \(hello)", "EHLO", expect: [250])
            var encrypted = configuration.implicitTLS
            if !configuration.implicitTLS, ehlo.lines.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) {
                _ = try await command("STARTTLS", "STARTTLS", expect: [220])
                let context = try tlsContext()
                try await channel.channel.eventLoop.submit {
                    try channel.channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: configuration.host), position: .first)
                }.get()
                ehlo = try await command("EHLO \(hello)", "EHLO after STARTTLS", expect: [250])
                encrypted = true
            }
            if let username = configuration.username, let password = configuration.password {
                // Credentials never cross the network in clear: a relay that stops offering STARTTLS
                // (or someone in the path who strips it) gets no password. The mail stays queued.
                guard encrypted else {
                    throw SMTPError.protocolViolation("the relay offers no STARTTLS; not sending credentials in clear")
                }
                let mechanisms = ehlo.lines.first { $0.uppercased().hasPrefix("AUTH") }?.uppercased() ?? ""
                if mechanisms.contains("PLAIN") {
                    let token = Data("\u{0}\(username)\u{0}\(password)".utf8).base64EncodedString()
                    _ = try await command("AUTH PLAIN \(token)", "AUTH", expect: [235])
                } else {
                    _ = try await command("AUTH LOGIN", "AUTH", expect: [334])
                    _ = try await command(Data(username.utf8).base64EncodedString(), "AUTH", expect: [334])
                    _ = try await command(Data(password.utf8).base64EncodedString(), "AUTH", expect: [235])
                }
            }
            _ = try await command("MAIL FROM:<\(configuration.from)>", "MAIL FROM", expect: [250])
            _ = try await command("RCPT TO:<\(message.to)>", "RCPT TO", expect: [250, 251])
            _ = try await command("DATA", "DATA", expect: [354])
            try await outbound.write(ByteBuffer(string: MailFormat.render(message, from: configuration.from)))
            _ = try await command(".", "end of DATA", expect: [250])
            _ = try? await command("QUIT", "QUIT", expect: [221])
            logger.info("mail delivered", metadata: ["smtp.host": .string(configuration.host)])
        }
    }
}

/// Splits the server's byte stream into reply lines (CRLF or LF terminated).
struct SMTPLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > 4096 { throw SMTPError.protocolViolation("reply line too long") }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytesView.last == UInt8(ascii: "\r") {
            line = line.getSlice(at: line.readerIndex, length: line.readableBytes - 1)!
        }
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }
}

/// The message text for DATA: headers, a base64 UTF-8 plain-text body, and the dot-stuffing of
/// RFC 5321 §4.5.2, ending before the terminating "." line.
enum MailFormat {
    static func render(_ message: MailMessage, from: String, date: Date = Date()) -> String {
        // Printable ASCII as it is; anything else (non-ASCII, and control characters such as a CR or
        // LF that a display name put there) as an RFC 2047 encoded word, so no text of the user's
        // can end the header and start another, or a command of the SMTP session.
        let subject =
            message.subject.unicodeScalars.allSatisfy { (0x20..<0x7F).contains($0.value) }
            ? message.subject : "=?UTF-8?B?\(Data(message.subject.utf8).base64EncodedString())?="
        let messageID = "<\(UUID().uuidString.lowercased())@\(from.split(separator: "@").last ?? "tessera")>"
        var headers = [
            "From: \(from)",
            "To: \(message.to)",
            "Subject: \(subject)",
            "Date: \(rfc5322Date(date))",
            "Message-ID: \(messageID)",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: base64",
        ].joined(separator: "\r\n")
        headers += "\r\n\r\n"
        // Base64 in lines of 76 characters; such lines never start with ".", so no dot-stuffing is
        // needed, and the body survives any relay whatever its characters.
        let encoded = Array(Data(message.body.utf8).base64EncodedString())
        let lines = stride(from: 0, to: encoded.count, by: 76).map { String(encoded[$0..<min($0 + 76, encoded.count)]) }
        return headers + lines.joined(separator: "\r\n") + "\r\n"
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss +0000"
        return formatter.string(from: date)
    }
}
