import ArgumentParser
import Foundation
import TesseraShared

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `tessera`, the operators' command line (issue 27): the admin API over HTTP, export and import,
/// and the signing-key directory.
struct Tessera: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tessera",
        abstract: "Administer a Tessera deployment from the command line.",
        discussion: """
            Talks to the admin plane of one deployment: users, tenants, identity providers, \
            admin credentials, the anonymous cleanup and the audit log; moves a tenant with its users, \
            providers and mail templates to another deployment or tenant (export, import), imports a \
            Firebase CLI export; and manages the token service's signing-key directory (keys).

            CONNECTION (an option wins over its environment variable):
              --admin-url   TESSERA_ADMIN_URL         the admin plane
                                                      (default http://127.0.0.1:9098)
              --token-file  TESSERA_ADMIN_TOKEN_FILE  a file holding the admin credential
                            TESSERA_ADMIN_TOKEN       the credential itself (no file named)
              --project     TESSERA_PROJECT_ID        the project (default tessera-local)
              --tenant                                a tenant (default: the default scope)
            The credential goes out as a Bearer token; it is never printed or logged.

            OUTPUT: tables by default; --json prints one JSON document (an array of \
            objects as the API returns them, or one object). Errors go to stderr as \
            `tessera: <CODE> : <detail>`: the Firebase error code (USER_NOT_FOUND, …) \
            or the command line's own (UNAVAILABLE, INVALID_ARGUMENT, UNAUTHENTICATED).

            EXIT STATUS:
              0   done
              1   the server refused the request (a Firebase error), other failures
              2   not found (USER_NOT_FOUND, TENANT_NOT_FOUND,
                  CONFIGURATION_NOT_FOUND, CREDENTIAL_NOT_FOUND, any 404)
              3   no credential, or the credential was refused (401/403)
              4   partial failure: some items of a batch failed (an import)
              5   unavailable: the admin plane could not be reached, timed out,
                  or answered 502/503/504
              64  usage error (a wrong option or argument)

            EXAMPLES:
              export TESSERA_ADMIN_URL=http://127.0.0.1:9098
              export TESSERA_ADMIN_TOKEN_FILE=$HOME/.tessera-token
              tessera tenants create --display-name shop --password-signup
              tessera users list --tenant shop-x3k9a --all --json > users.json
              tessera users disable 3LdkS0sWq --tenant shop-x3k9a
              tessera export --tenant shop-x3k9a --output shop.json
              tessera import shop.json --create-tenant \\
                  --admin-url https://admin.other.example
              tessera import --from-firebase users.json --hash-config hash.txt
              tessera keys rotate --dir ./keys --lead 1h

            See docs/cli.md for every command, the export format and the Kubernetes recipes.
            """,
        version: TesseraVersion.current,
        subcommands: [
            Users.self, Tenants.self, Providers.self, Credentials.self, Keys.self, Cleanup.self, Audit.self,
            Export.self, Import.self,
        ])
}

@main
enum TesseraMain {
    static func main() async {
        do {
            var command = try Tessera.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as CLIError {
            Output.error(error)
            exit(error.status.rawValue)
        } catch {
            Tessera.exit(withError: error)
        }
    }
}
