import Hummingbird

/// A page of a keyset-paged admin list (`pageSize` / `pageToken`, docs/protocol/admin.md#admin-endpoints,
/// #tesseras-own-admin-resources): the store reads one row more than the page holds, and that row only says
/// whether another page follows.
struct Page<Row> {
    let rows: [Row]
    private let hasMore: Bool

    init(fetched: [Row], size: Int) {
        rows = Array(fetched.prefix(size))
        hasMore = fetched.count > size
    }

    /// The next page's token, the last row's key, while more rows remain.
    func nextToken(_ key: (Row) -> String) -> String? {
        hasMore ? rows.last.map(key) : nil
    }
}

extension Page {
    /// A page of one of Tessera's own lists: `pageSize` rows (`adminPageSize`) after `pageToken`, `list`
    /// asked for one row more.
    static func fetch(
        _ request: Request, _ list: (_ after: String?, _ limit: Int) async throws -> [Row]
    ) async throws -> Page {
        let size = request.adminPageSize
        return Page(fetched: try await list(request.pageToken, size + 1), size: size)
    }
}

extension Request {
    /// `pageToken`, nil when absent or empty.
    var pageToken: String? {
        uri.queryParameters.get("pageToken").flatMap { $0.isEmpty ? nil : String($0) }
    }

    /// `pageSize` as Tessera's own lists (docs/protocol/admin.md#tesseras-own-admin-resources) take it:
    /// 1–1000, 100 when absent.
    var adminPageSize: Int {
        min(max(uri.queryParameters.get("pageSize", as: Int.self) ?? 100, 1), 1000)
    }
}
