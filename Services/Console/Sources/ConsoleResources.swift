import Mustache

/// The console's pages, Mustache templates in `Templates/` (issue #25). `{{name}}` escapes for
/// HTML; nothing uses the unescaped `{{{…}}}`. Every page extends `layout`; each template's values
/// are a `ConsolePage` (`Pages/`). The files are embedded in
/// the binary at build time (`.embedInCode`), so the binary needs no resource directory. No inline
/// script or style: the CSP allows neither.
enum ConsoleTemplates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, bytes) in all { try library.register(text(bytes), named: name) }
        return library
    }

    static let all: [(String, [UInt8])] = [
        ("layout", PackageResources.layout_mustache), ("signIn", PackageResources.signIn_mustache),
        ("error", PackageResources.error_mustache), ("home", PackageResources.home_mustache),
        ("users", PackageResources.users_mustache), ("user", PackageResources.user_mustache),
        ("methods", PackageResources.methods_mustache), ("cleanup", PackageResources.cleanup_mustache),
        ("audit", PackageResources.audit_mustache), ("tenants", PackageResources.tenants_mustache),
        ("credentials", PackageResources.credentials_mustache), ("templates", PackageResources.templates_mustache),
        ("transfer", PackageResources.transfer_mustache), ("providers", PackageResources.providers_mustache),
        ("serviceAccounts", PackageResources.serviceAccounts_mustache),
    ]
}

/// The console's stylesheet, script and icon in `Assets/`, served from `/console/assets/` (the CSP
/// allows scripts and styles from the console's own origin only). The script is progressive
/// enhancement: every page works without it.
public enum ConsoleAssets {
    public static let css = text(PackageResources.console_css)
    public static let js = text(PackageResources.console_js)
    public static let icon = text(PackageResources.icon_svg)
}

/// A resource file's text, without the newline that ends the file.
private func text(_ bytes: [UInt8]) -> String {
    let text = String(decoding: bytes, as: UTF8.self)
    return text.hasSuffix("\n") ? String(text.dropLast()) : text
}
