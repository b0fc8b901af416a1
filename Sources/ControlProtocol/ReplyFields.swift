// Decoding reply objects on the client side: every key is required (a null one says so with
// an optional type), and a missing or mistyped key fails with a message naming it.
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

    /// The value of a key that may be null (nil), as `get` reads it.
    private func readOptional<T>(
        _ key: String, _ kind: String, _ get: (JSONValue) -> T?
    ) throws(ReplyDecodingError) -> T? {
        if try any(key).isNull { return nil }
        return try read(key, kind + " or null", get)
    }

    /// Whether the object has `key` at all: for keys only some shapes carry (an event's extras).
    func has(_ key: String) -> Bool { value[key] != nil }

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

    func double(_ key: String) throws(ReplyDecodingError) -> Double { try read(key, "a number", \.doubleValue) }

    func optionalDouble(_ key: String) throws(ReplyDecodingError) -> Double? {
        try readOptional(key, "a number", \.doubleValue)
    }

    func int(_ key: String) throws(ReplyDecodingError) -> Int { try read(key, "an integer", \.intValue) }

    func optionalInt(_ key: String) throws(ReplyDecodingError) -> Int? {
        try readOptional(key, "an integer", \.intValue)
    }

    func strings(_ key: String) throws(ReplyDecodingError) -> [String] {
        try read(key, "a list of strings") { value in
            value.arrayValue.flatMap { items in
                items.allSatisfy { $0.stringValue != nil } ? items.compactMap(\.stringValue) : nil
            }
        }
    }

    /// A list of strings that an older recd does not send (nil when missing or null).
    func optionalStrings(_ key: String) throws(ReplyDecodingError) -> [String]? {
        guard let item = value[key], !item.isNull else { return nil }
        return try strings(key)
    }

    /// A string that an older recd does not send (nil when missing or null).
    func newerString(_ key: String) throws(ReplyDecodingError) -> String? {
        guard let item = value[key], !item.isNull else { return nil }
        return try string(key)
    }

    /// A flag that an older recd does not send (false when missing).
    func newerBool(_ key: String) throws(ReplyDecodingError) -> Bool {
        value[key] == nil ? false : try bool(key)
    }

    func object<T: ReplyObject>(_ key: String, as type: T.Type = T.self) throws(ReplyDecodingError) -> T {
        try T(json: try any(key))
    }

    func list<T: ReplyObject>(_ key: String, of type: T.Type = T.self) throws(ReplyDecodingError) -> [T] {
        try T.list(try any(key), key)
    }

    /// A list of objects that an older recd does not send (empty when missing).
    func newerList<T: ReplyObject>(_ key: String, of type: T.Type = T.self) throws(ReplyDecodingError) -> [T] {
        value[key] == nil ? [] : try list(key)
    }
}
