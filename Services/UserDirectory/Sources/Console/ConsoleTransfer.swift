import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TesseraConsole
import TesseraShared

/// Moving users in and out from the console: the export is the Firebase CLI's format
/// (`{"users":[…]}`, what `firebase auth:import` reads) with the scope's hash parameters beside it;
/// the import sends such a file in batches of 1,000 to the admin API's own `accounts:batchCreate`
/// handler, from the page's script, which shows the progress.
extension ConsoleController {
    static var importBatch: Int { 1000 }

    @Sendable func transfer(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let config = try await accounts.admin.hashConfig(scope: scope, logger: context.logger)
        return views.render(
            TransferPage(
                chrome: chrome(context, scope: scope, section: .users), rounds: config.rounds, memCost: config.memCost))
    }

    /// Every user of the scope, streamed page by page, with the hash parameters their hashes need.
    @Sendable func export(_ request: Request, context: AdminContext) async throws -> Response {
        let scope = try await tenants.usersScope(of: context)
        let config = try await accounts.admin.hashConfig(scope: scope, logger: context.logger)
        let accounts = self.accounts
        let logger = context.logger
        let hashConfig = ProjectConfigWire.HashConfigWire(
            algorithm: "SCRYPT", signerKey: config.signerKey, saltSeparator: config.saltSeparator,
            rounds: config.rounds, memoryCost: config.memCost)
        // A read, but of every user and password hash of the scope: in the audit log like a write.
        try await credentials.audit(
            scope: scope, actor: context.principal.credentialId, action: "GET \(Self.base(scope))/export.json",
            target: "users", requestID: context.requestID, logger: context.logger)
        let encoder = JSONEncoder()
        let body = ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "{\"users\":["))
            var after: String?
            var first = true
            repeat {
                let page = try await accounts.admin.batchGet(scope: scope, after: after, limit: 1000, logger: logger)
                var buffer = ByteBuffer()
                for user in page {
                    if !first { buffer.writeString(",") }
                    first = false
                    buffer.writeBytes(
                        try encoder.encode(
                            AdminAccountsController<Tenants>.ExportedUserWire(user)))
                }
                try await writer.write(buffer)
                after = page.count == 1000 ? page.last?.user.localId : nil
            } while after != nil
            try await writer.write(ByteBuffer(string: "],\"hashConfig\":"))
            try await writer.write(ByteBuffer(bytes: try encoder.encode(hashConfig)))
            try await writer.write(ByteBuffer(string: "}\n"))
            try await writer.finish(nil)
        }
        let name = scope.isProject ? "project" : scope.key
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/json",
                .contentDisposition: "attachment; filename=\"users-\(name).json\"",
            ],
            body: body)
    }

    /// One batch of the import: the admin API's `accounts:batchCreate` on this scope, as it is.
    @Sendable func importBatch(_ request: Request, context: AdminContext) async throws -> Response {
        try await ImportController(accounts: accounts, tenants: tenants).batchCreate(request, context: context)
            .response(from: request, context: context)
    }
}
