// Which JACK clients are RTP streams that PipeWire receives, read from `pw-dump`'s JSON.
//
// PipeWire's module-rtp-source (0.3.65) makes one node for each session a SAP announcement brings
// and names it after the session (the SDP's `s=`): through PipeWire's libjack it is a client of
// that name, like any application. Only the node's properties tell it apart (`rtp.session`,
// `rtp.origin` = the SDP's `o=`: "USER SESSION-ID VERSION IN IP4 ADDRESS"), and libjack does not
// show them. recd runs `pw-dump` (pipewire-bin) and reads here the nodes that carry `rtp.session`.
//
// Pure and total: the reader walks the bytes once, keeps only the few properties it needs of one
// object at a time, and gives up (nil) on anything that is not JSON, is longer than
// `maximumBytes`, or nests deeper than `maximumDepth`.

/// An RTP stream as PipeWire's rtp-source announces it: the session's name and its sender.
public struct AnnouncedRTPStream: Hashable, Sendable {
    /// The SDP's session name (`s=`; module-rtp-sink's `sess.name`).
    public var name: String
    /// The sender's address: the SDP origin's (`o=`; nil when it announced 0.0.0.0, a
    /// module-rtp-sink without `source.ip`); for the sender's own node, where it sends.
    public var address: String?
    /// A receiver's node: the SDP origin line (`rtp.origin`), which its SAP announcements carry
    /// too (the RTP monitor matches them by it); nil for a sender's own node.
    public var origin: String?
    /// A receiver's node: its buffer (`sess.latency.msec`), when the node says.
    public var latencyMilliseconds: Int?

    public init(name: String, address: String?, origin: String? = nil, latencyMilliseconds: Int? = nil) {
        self.name = name
        self.address = address
        self.origin = origin
        self.latencyMilliseconds = latencyMilliseconds
    }
}

/// Reading `pw-dump`'s JSON. Pure.
public enum PipeWireDump {
    /// The most of `pw-dump`'s output read (a graph of a few hundred objects is under 1 MiB).
    public static let maximumBytes = 8 << 20
    /// The deepest nesting of arrays and objects read (pw-dump's is under 10).
    public static let maximumDepth = 64

    /// The node properties the reader keeps (strings; `sess.latency.msec` may be a number).
    public static let keptProperties: Set<String> = [
        "node.description", "node.nick", "node.name", "application.name", "rtp.session", "rtp.origin",
        "rtp.destination.ip", "sess.latency.msec",
    ]

    /// The RTP streams among the nodes of a `pw-dump` (a JSON array of objects), by the JACK
    /// client name each node shows as. Objects that are not nodes, nodes without `rtp.session`,
    /// and values that are not the shape pw-dump prints are passed over; nil for bytes that are
    /// not JSON, more than `maximumBytes` or nested deeper than `maximumDepth`.
    public static func rtpStreams(json: [UInt8]) -> [String: AnnouncedRTPStream]? {
        guard json.count <= maximumBytes else { return nil }
        return json.withUnsafeBytes { bytes in
            var reader = JSONReader(bytes: bytes)
            var sessions: [String: AnnouncedRTPStream] = [:]
            let read = reader.array { reader in
                guard let node = reader.node() else { return false }
                if let node, let found = rtpStream(node) { sessions[found.client] = found.session }
                return true
            }
            return read && reader.atEnd() ? sessions : nil
        }
    }

    /// A node's session, by its JACK client name; nil for a node without `rtp.session`.
    static func rtpStream(_ props: [String: JSONScalar]) -> (client: String, session: AnnouncedRTPStream)? {
        guard case .string(let session)? = props["rtp.session"], let client = jackClientName(props) else { return nil }
        let origin = props["rtp.origin"]?.string
        // A receiver's node names its sender (the SDP origin); a sender's own (module-rtp-sink)
        // where it sends.
        let address = origin.flatMap(senderAddress(origin:)) ?? props["rtp.destination.ip"]?.string
        let latency: Int? =
            switch props["sess.latency.msec"] {
            case .integer(let value)?: value
            case .string(let text)?: Int(text)
            default: nil
            }
        return (
            client,
            AnnouncedRTPStream(
                name: session, address: address, origin: origin,
                latencyMilliseconds: latency.flatMap { (1...10_000).contains($0) ? $0 : nil })
        )
    }

    /// The JACK client name PipeWire's libjack gives a node (pipewire-jack 0.3.65): its
    /// description, else its nick, else its name; prefixed with its application's name and `/`
    /// when it has one that differs.
    public static func jackClientName(_ props: [String: JSONScalar]) -> String? {
        let name = props["node.description"]?.string ?? props["node.nick"]?.string ?? props["node.name"]?.string
        guard let name, !name.isEmpty else { return nil }
        guard let application = props["application.name"]?.string, application != name else { return name }
        return application + "/" + name
    }

    /// The address of an SDP origin line's value (`USER SESSION-ID VERSION IN IP4|IP6 ADDRESS`);
    /// nil for another shape or an unspecified address.
    public static func senderAddress(origin: String) -> String? {
        let fields = origin.split(separator: " ")
        guard fields.count == 6, fields[3] == "IN", fields[4] == "IP4" || fields[4] == "IP6" else { return nil }
        let address = String(fields[5])
        return address == "0.0.0.0" || address == "::" ? nil : address
    }
}

/// A JSON value the reader keeps: a string, an integer (at most 18 digits), or a Boolean.
public enum JSONScalar: Hashable, Sendable {
    case string(String)
    case integer(Int)
    case bool(Bool)

    public var string: String? {
        if case .string(let text) = self { text } else { nil }
    }
}

/// A one-pass JSON reader over bytes (RFC 8259), keeping only what it is asked for. Every read
/// moves forward; `depth` bounds the nesting; a failed read leaves the reader failed.
struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private var byte: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func take(_ expected: UInt8) -> Bool {
        skipSpace()
        guard byte == expected else { return false }
        index += 1
        return true
    }

    /// Only space after the value.
    mutating func atEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    /// An array, each element read by `element` (which returns false on a failed read).
    mutating func array(_ element: (inout JSONReader) -> Bool) -> Bool {
        guard take(UInt8(ascii: "[")) else { return false }
        return container(close: UInt8(ascii: "]")) { reader in element(&reader) }
    }

    /// An object, each member's value read by `member` with its key.
    mutating func object(_ member: (inout JSONReader, String?) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        return container(close: UInt8(ascii: "}")) { reader in
            reader.skipSpace()
            // Keys longer than any kept one are read past, not kept.
            guard let key = reader.string(keeping: 64), reader.take(UInt8(ascii: ":")) else { return false }
            return member(&reader, key.text)
        }
    }

    private mutating func container(close: UInt8, _ item: (inout JSONReader) -> Bool) -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= PipeWireDump.maximumDepth else { return false }
        if take(close) { return true }
        while true {
            guard item(&self) else { return false }
            if take(close) { return true }
            guard take(UInt8(ascii: ",")) else { return false }
        }
    }

    /// One element of pw-dump's array: the props of a node (`type` ending in `:Node`,
    /// `info.props`), or nil inside for anything else; nil outside for a failed read.
    mutating func node() -> [String: JSONScalar]?? {
        skipSpace()
        guard byte == UInt8(ascii: "{") else { return skipValue() ? .some(nil) : nil }
        var isNode = false
        var props: [String: JSONScalar]?
        let read = object { reader, key in
            switch key {
            case "type":
                guard let value = reader.scalar() else { return false }
                if case .string(let type)? = value { isNode = type.hasSuffix(":Node") }
                return true
            case "info":
                reader.skipSpace()
                guard reader.byte == UInt8(ascii: "{") else { return reader.skipValue() }
                return reader.object { reader, key in
                    guard key == "props" else { return reader.skipValue() }
                    reader.skipSpace()
                    guard reader.byte == UInt8(ascii: "{") else { return reader.skipValue() }
                    var kept: [String: JSONScalar] = [:]
                    let read = reader.object { reader, key in
                        guard let key, PipeWireDump.keptProperties.contains(key) else { return reader.skipValue() }
                        guard let value = reader.scalar() else { return false }
                        if let value { kept[key] = value }
                        return true
                    }
                    props = kept
                    return read
                }
            default:
                return reader.skipValue()
            }
        }
        guard read else { return nil }
        return .some(isNode ? props : nil)
    }

    /// A string, number or Boolean kept (nil inside for null, a number that is not a small
    /// integer, or an array or object, which are read past); nil outside for a failed read.
    mutating func scalar() -> JSONScalar?? {
        skipSpace()
        switch byte ?? 0 {
        case UInt8(ascii: "\""):
            guard let read = string(keeping: PipeWireDump.maximumBytes) else { return nil }
            return .some(read.text.map(JSONScalar.string))
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            let value = byte == UInt8(ascii: "t")
            return skipValue() ? .some(.bool(value)) : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            guard skipValue() else { return nil }
            let digits = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
            let integral = digits.count <= 18 && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            return .some(integral ? Int(String(decoding: digits, as: UTF8.self)).map(JSONScalar.integer) : nil)
        default:
            return skipValue() ? .some(nil) : nil
        }
    }

    /// Reads past one value of any kind; false when it is not JSON.
    mutating func skipValue() -> Bool {
        skipSpace()
        switch byte ?? 0 {
        case UInt8(ascii: "{"):
            return object { reader, _ in reader.skipValue() }
        case UInt8(ascii: "["):
            return array { reader in reader.skipValue() }
        case UInt8(ascii: "\""):
            return string(keeping: 0) != nil
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number()
        default:
            return false
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let length = word.utf8CodeUnitCount
        guard index + length <= bytes.count else { return false }
        let expected = UnsafeRawBufferPointer(start: word.utf8Start, count: length)
        guard UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]).elementsEqual(expected) else {
            return false
        }
        index += length
        return true
    }

    private mutating func digits() -> Bool {
        let start = index
        while let byte, byte >= 0x30, byte <= 0x39 { index += 1 }
        return index > start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    private mutating func number() -> Bool {
        if byte == UInt8(ascii: "-") { index += 1 }
        if byte == UInt8(ascii: "0") {
            index += 1
        } else if !digits() {
            return false
        }
        if byte == UInt8(ascii: ".") {
            index += 1
            guard digits() else { return false }
        }
        if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            index += 1
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") { index += 1 }
            guard digits() else { return false }
        }
        return true
    }

    /// A string read: its text, or nil when it was longer than asked (read past all the same).
    struct StringRead {
        var text: String?
    }

    /// A string at the reader (its opening quote next): its text when it decodes to at most
    /// `limit` bytes; nil when it is not a JSON string.
    mutating func string(keeping limit: Int) -> StringRead? {
        guard byte == UInt8(ascii: "\"") else { return nil }
        index += 1
        var text: [UInt8] = []
        var overLimit = false
        func append(_ scalar: Unicode.Scalar) {
            guard !overLimit else { return }
            if let encoded = UTF8.encode(scalar) { text.append(contentsOf: encoded) }
            if text.count > limit { overLimit = true }
        }
        while let current = byte {
            index += 1
            switch current {
            case UInt8(ascii: "\""):
                return StringRead(text: overLimit ? nil : String(decoding: text, as: UTF8.self))
            case UInt8(ascii: "\\"):
                guard let escaped = byte else { return nil }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): append(Unicode.Scalar(escaped))
                case UInt8(ascii: "b"): append("\u{08}")
                case UInt8(ascii: "f"): append("\u{0C}")
                case UInt8(ascii: "n"): append("\n")
                case UInt8(ascii: "r"): append("\r")
                case UInt8(ascii: "t"): append("\t")
                case UInt8(ascii: "u"):
                    guard let unit = hex4() else { return nil }
                    append(decodeUTF16(unit))
                default: return nil
                }
            case 0..<0x20:
                return nil
            default:
                // Raw UTF-8 (String(decoding:) repairs what is not).
                if !overLimit {
                    text.append(current)
                    if text.count > limit { overLimit = true }
                }
            }
        }
        return nil
    }

    /// Four hex digits after `\u`.
    private mutating func hex4() -> UInt16? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let digit: UInt8
            switch bytes[index] {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = bytes[index] - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = bytes[index] - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = bytes[index] - 55
            default: return nil
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// The scalar of a `\u` escape, with the low surrogate of a pair read from the following
    /// `\uXXXX`; U+FFFD for a lone surrogate.
    private mutating func decodeUTF16(_ unit: UInt16) -> Unicode.Scalar {
        if let scalar = Unicode.Scalar(unit) { return scalar }
        guard unit >= 0xD800, unit < 0xDC00, index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
            bytes[index + 1] == UInt8(ascii: "u")
        else { return "\u{FFFD}" }
        let saved = index
        index += 2
        guard let low = hex4(), low >= 0xDC00, low < 0xE000 else {
            index = saved
            return "\u{FFFD}"
        }
        let value = 0x10000 + (UInt32(unit - 0xD800) << 10) + UInt32(low - 0xDC00)
        return Unicode.Scalar(value) ?? "\u{FFFD}"
    }
}
