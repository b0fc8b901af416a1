// Decoding reply objects and events on the client side (docs/protocol.md, "Whole replies,
// tolerant readers"): recd sends every key of an object; a reader refuses one only for a
// *required* key that is missing or has the wrong type (a message names the key and the object).
// An optional key that is missing reads as its null — unknown: nil, an empty list, false for a
// flag — and a key this client does not know is passed over. Which keys are required is each
// object's decoder's choice, made with the `optional...` readers here and checked against the
// table in Tests/EndToEndTests/TolerantReaderTests.swift.
// Names (states, categories, reasons) stay strings so that a client reads a newer recd's values.

/// A reply recd sent that does not have the shape this client expects.
public struct ReplyDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// A typed reply object: built by recd, encoded with `json` (version-2 keys), decoded by clients.
public protocol ReplyObject: Sendable, Equatable {
    var json: JSONValue { get }
    init(json: JSONValue) throws(ReplyDecodingError)
}

extension ReplyObject {
    /// The object's keys and values, as the fields of a reply that carries them at its top level.
    public var fields: [(String, JSONValue)] { json.objectValue ?? [] }

    /// Decodes the object under `key` of a reply.
    public init(reply: JSONValue, key: String) throws(ReplyDecodingError) {
        guard let value = reply[key] else { throw ReplyDecodingError("the reply is missing \"\(key)\"") }
        try self.init(json: value)
    }

    /// Decodes the list of these objects under `key` of a reply.
    public static func list(reply: JSONValue, key: String) throws(ReplyDecodingError) -> [Self] {
        guard let value = reply[key] else { throw ReplyDecodingError("the reply is missing \"\(key)\"") }
        return try list(value, key)
    }

    /// Decodes a list of these objects.
    static func list(_ value: JSONValue, _ key: String) throws(ReplyDecodingError) -> [Self] {
        guard let items = value.arrayValue else { throw ReplyDecodingError("\"\(key)\" must be a list") }
        var result: [Self] = []
        for item in items { result.append(try Self(json: item)) }
        return result
    }
}

/// One reply object's keys, read with errors that name the key and the object.
struct ReplyFields {
    let value: JSONValue
    let what: String

    init(_ value: JSONValue, _ what: String) throws(ReplyDecodingError) {
        guard case .object = value else { throw ReplyDecodingError("\(what) must be a JSON object") }
        self.value = value
        self.what = what
    }

    func any(_ key: String) throws(ReplyDecodingError) -> JSONValue {
        guard let item = value[key] else { throw ReplyDecodingError("\(what) is missing \"\(key)\"") }
        return item
    }

    /// The value of a required key, as `get` reads it; `kind` says what it must be.
    private func read<T>(_ key: String, _ kind: String, _ get: (JSONValue) -> T?) throws(ReplyDecodingError) -> T {
        guard let result = get(try any(key)) else { throw ReplyDecodingError("\"\(key)\" of \(what) must be \(kind)") }
        return result
    }

    /// The value of an optional key, as `get` reads it: nil when it is missing or null.
    private func readOptional<T>(
        _ key: String, _ kind: String, _ get: (JSONValue) -> T?
    ) throws(ReplyDecodingError) -> T? {
        guard let item = value[key], !item.isNull else { return nil }
        return try read(key, kind + " or null", get)
    }

    func string(_ key: String) throws(ReplyDecodingError) -> String { try read(key, "a string", \.stringValue) }

    /// A name of a closed set (a state, a reason), as its typed value.
    func name<T: RawRepresentable>(_ key: String, as type: T.Type = T.self) throws(ReplyDecodingError) -> T
    where T.RawValue == String {
        let text = try string(key)
        guard let name = T(rawValue: text) else {
            throw ReplyDecodingError("\"\(key)\" of \(what) is \"\(text)\", which this client does not know")
        }
        return name
    }

    /// An upstream numeric code with its name beside it (`reasonCode` and `reason`), as its typed
    /// value: the code decides, and the name must agree with it.
    func code<T: RawRepresentable>(
        _ key: String, namedBy nameKey: String, _ name: (T) -> String
    ) throws(ReplyDecodingError) -> T where T.RawValue == Int {
        let number = try int(key)
        guard let code = T(rawValue: number) else {
            throw ReplyDecodingError("\"\(key)\" of \(what) is \(number), which this client does not know")
        }
        let text = try string(nameKey)
        guard text == name(code) else {
            throw ReplyDecodingError(
                "\"\(nameKey)\" of \(what) is \"\(text)\", but \"\(key)\" \(number) is \"\(name(code))\"")
        }
        return code
    }

    func optionalString(_ key: String) throws(ReplyDecodingError) -> String? {
        try readOptional(key, "a string", \.stringValue)
    }

    func bool(_ key: String) throws(ReplyDecodingError) -> Bool { try read(key, "true or false", \.boolValue) }

    func optionalBool(_ key: String) throws(ReplyDecodingError) -> Bool? {
        try readOptional(key, "true or false", \.boolValue)
    }

    /// An optional flag: false when missing or null (a flag says that something is so).
    func flag(_ key: String) throws(ReplyDecodingError) -> Bool { try optionalBool(key) ?? false }

    func double(_ key: String) throws(ReplyDecodingError) -> Double { try read(key, "a number", \.doubleValue) }

    func optionalDouble(_ key: String) throws(ReplyDecodingError) -> Double? {
        try readOptional(key, "a number", \.doubleValue)
    }

    func int(_ key: String) throws(ReplyDecodingError) -> Int { try read(key, "an integer", \.intValue) }

    func optionalInt(_ key: String) throws(ReplyDecodingError) -> Int? {
        try readOptional(key, "an integer", \.intValue)
    }

    func strings(_ key: String) throws(ReplyDecodingError) -> [String] {
        try read(key, "a list of strings", Self.strings)
    }

    /// An optional list of strings: empty when missing or null.
    func optionalStrings(_ key: String) throws(ReplyDecodingError) -> [String] {
        try readOptional(key, "a list of strings", Self.strings) ?? []
    }

    private static func strings(_ value: JSONValue) -> [String]? {
        value.arrayValue.flatMap { items in
            items.allSatisfy { $0.stringValue != nil } ? items.compactMap(\.stringValue) : nil
        }
    }

    func object<T: ReplyObject>(_ key: String, as type: T.Type = T.self) throws(ReplyDecodingError) -> T {
        try T(json: try any(key))
    }

    /// An optional object: nil when missing or null.
    func optionalObject<T: ReplyObject>(_ key: String, as type: T.Type = T.self) throws(ReplyDecodingError) -> T? {
        guard let item = value[key], !item.isNull else { return nil }
        return try T(json: item)
    }

    func list<T: ReplyObject>(_ key: String, of type: T.Type = T.self) throws(ReplyDecodingError) -> [T] {
        try T.list(try any(key), key)
    }

    /// An optional list of objects: empty when missing or null.
    func optionalList<T: ReplyObject>(_ key: String, of type: T.Type = T.self) throws(ReplyDecodingError) -> [T] {
        guard let item = value[key], !item.isNull else { return [] }
        return try T.list(item, key)
    }
}
