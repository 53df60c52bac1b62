import NIOCore
import PostgresNIO
import TesseraShared

/// A scope binds as its `tenant_id` text.
extension Scope: PostgresNonThrowingEncodable, PostgresDynamicTypeEncodable {
    public static var psqlType: PostgresDataType { .text }
    public static var psqlFormat: PostgresFormat { .binary }

    public func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        key.encode(into: &byteBuffer, context: context)
    }
}
