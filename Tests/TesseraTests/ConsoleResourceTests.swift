import Foundation
import HTTPTypes
import Hummingbird
import Testing

@testable import TesseraConsole
@testable import TesseraShared

/// The console's templates and assets are files of the `TesseraConsole` target, embedded in the
/// binary at build time: every one is there, parses, and renders.
@Suite("the console's embedded templates and assets")
struct ConsoleResourceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Services/Console/Sources")

    @Test("every template file is registered, and the library parses them all")
    func everyTemplateIsRegistered() throws {
        let files = try FileManager.default.contentsOfDirectory(
            atPath: Self.root.appendingPathComponent("Templates").path
        )
        .filter { $0.hasSuffix(".mustache") }.map { String($0.dropLast(".mustache".count)) }
        #expect(Set(files) == Set(ConsoleTemplates.all.map(\.0)))
        #expect(ConsoleTemplates.all.allSatisfy { !$0.1.isEmpty })
        _ = try ConsoleViews()
    }

    @Test("a page renders inside the layout, its values escaped")
    func rendersInTheLayout() throws {
        let views = try ConsoleViews()
        #expect(views.error(.notFound, heading: "Not <here>", message: "Gone & away").status == .notFound)
        let html = views.html(ErrorPage(heading: "Not <here>", message: "Gone & away"))
        #expect(html.hasPrefix("<!doctype html>"))
        #expect(html.contains("Not &lt;here&gt; · Tessera console"))
        #expect(html.contains("Gone &amp; away"))
        #expect(html.contains(#"href="/console/assets/console.css""#))
    }

    @Test("the assets are the files, without the newline that ends each")
    func assetsAreTheFiles() throws {
        for (asset, file) in [
            (ConsoleAssets.css, "console.css"), (ConsoleAssets.js, "console.js"), (ConsoleAssets.icon, "icon.svg"),
        ] {
            let text = try String(contentsOf: Self.root.appendingPathComponent("Assets/\(file)"), encoding: .utf8)
            #expect(asset + "\n" == text, "\(file)")
        }
        #expect(ConsoleAssets.icon.hasPrefix("<svg") && !ConsoleAssets.icon.contains("\n"))
    }
}
