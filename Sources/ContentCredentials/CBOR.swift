// CBOR (RFC 8949), the part C2PA and COSE use: the data items and their deterministic encoding
// (RFC 8949 §4.2.1: shortest arguments, definite lengths, map keys in the bytewise order of their
// encodings, floats in the shortest form that keeps their value). The decoder reads any
// well-formed item, indefinite lengths included, and is total: any bytes give an item or nil,
// in time and memory bounded by their length (nesting at most `CBOR.maximumDepth` deep).
//
// Pure values and functions: any thread.

/// One CBOR data item.
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// The integer -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// In the order given; the encoder sorts the keys.
    case map([Pair])
    case tagged(UInt64, CBOR)
    /// Simple values: 20 false, 21 true, 22 null, 23 undefined, others as they are.
    case simple(UInt8)
    case float(Double)

    public struct Pair: Sendable, Equatable {
        public var key: CBOR
        public var value: CBOR
        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    public static let `false` = CBOR.simple(20)
    public static let `true` = CBOR.simple(21)
    public static let null = CBOR.simple(22)
    public static let undefined = CBOR.simple(23)

    /// Any Int as CBOR's unsigned or negative integer.
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A map with text keys, in the order given (the encoder sorts them).
    public static func textMap(_ pairs: [(String, CBOR)]) -> CBOR {
        .map(pairs.map { Pair(.text($0.0), $0.1) })
    }

    /// The value under text key `key` of a map; nil for anything else.
    public subscript(key: String) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key == .text(key) }?.value
    }

    /// The deterministic encoding of this item.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    public func encode(into out: inout [UInt8]) {
        switch self {
        case .unsigned(let value): CBOR.head(0, value, into: &out)
        case .negative(let value): CBOR.head(1, value, into: &out)
        case .bytes(let bytes):
            CBOR.head(2, UInt64(bytes.count), into: &out)
            out += bytes
        case .text(let text):
            let bytes = Array(text.utf8)
            CBOR.head(3, UInt64(bytes.count), into: &out)
            out += bytes
        case .array(let items):
            CBOR.head(4, UInt64(items.count), into: &out)
            for item in items { item.encode(into: &out) }
        case .map(let pairs):
            CBOR.head(5, UInt64(pairs.count), into: &out)
            let sorted = pairs.map { ($0.key.encoded, $0.value) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }
            for (key, value) in sorted {
                out += key
                value.encode(into: &out)
            }
        case .tagged(let tag, let item):
            CBOR.head(6, tag, into: &out)
            item.encode(into: &out)
        case .simple(let value):
            if value < 24 {
                out.append(0xe0 | value)
            } else {
                out += [0xf8, value]
            }
        case .float(let value): CBOR.encodeFloat(value, into: &out)
        }
    }

    /// The head of a data item: major type and argument, the argument in its shortest form.
    static func head(_ major: UInt8, _ argument: UInt64, into out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xff: out += [type | 24, UInt8(argument)]
        case 0x100...0xffff: out += [type | 25] + bigEndian(argument, bytes: 2)
        case 0x1_0000...0xffff_ffff: out += [type | 26] + bigEndian(argument, bytes: 4)
        default: out += [type | 27] + bigEndian(argument, bytes: 8)
        }
    }

    static func bigEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }

    /// The shortest of half, single and double precision that holds `value` exactly; NaN as
    /// the half-precision quiet NaN (RFC 8949 §4.2.2).
    static func encodeFloat(_ value: Double, into out: inout [UInt8]) {
        if value.isNaN {
            out += [0xf9, 0x7e, 0x00]
            return
        }
        if let half = HalfFloat.bits(exactly: value) {
            out += [0xf9] + bigEndian(UInt64(half), bytes: 2)
        } else if Double(Float(value)) == value {
            out += [0xfa] + bigEndian(UInt64(Float(value).bitPattern), bytes: 4)
        } else {
            out += [0xfb] + bigEndian(value.bitPattern, bytes: 8)
        }
    }
}

/// IEEE 754 half precision by hand (RFC 8949 Appendix D), so the codec needs no Float16.
enum HalfFloat {
    static func value(_ half: UInt16) -> Double {
        let exponent = Int((half >> 10) & 0x1f)
        let mantissa = Double(half & 0x3ff)
        let magnitude: Double
        switch exponent {
        case 0: magnitude = mantissa * 0x1p-24
        case 31: magnitude = mantissa == 0 ? .infinity : .nan
        default: magnitude = (mantissa + 1024) * Double(sign: .plus, exponent: exponent - 25, significand: 1)
        }
        return half & 0x8000 != 0 ? -magnitude : magnitude
    }

    /// The half-precision bits of `value` when it has them exactly; nil otherwise.
    static func bits(exactly value: Double) -> UInt16? {
        let sign: UInt16 = value.sign == .minus ? 0x8000 : 0
        if value.isInfinite { return sign | 0x7c00 }
        let magnitude = value.magnitude
        if magnitude == 0 { return sign }
        // Subnormal halves: multiples of 2^-24 below 2^-14.
        if magnitude < 0x1p-14 {
            let units = magnitude * 0x1p24
            guard units == units.rounded(), units >= 1 else { return nil }
            return sign | UInt16(units)
        }
        let exponent = Int(magnitude.exponent)
        guard exponent <= 15 else { return nil }
        let scaled = magnitude * Double(sign: .plus, exponent: 10 - exponent, significand: 1)
        guard scaled == scaled.rounded() else { return nil }
        let mantissa = UInt16(scaled) - 1024
        return sign | UInt16(exponent + 15) << 10 | mantissa
    }
}

extension CBOR {
    /// The deepest nesting the decoder follows.
    public static let maximumDepth = 64

    /// The one item `bytes` holds (nothing after it); nil when they are not exactly one
    /// well-formed item (or nest deeper than `maximumDepth`).
    public static func decode(_ bytes: [UInt8]) -> CBOR? {
        var reader = CBORReader(bytes: bytes)
        guard let item = reader.item(depth: 0), reader.offset == bytes.count else { return nil }
        return item
    }

    /// The first item of `bytes` and how many bytes it took; nil when none is well-formed.
    public static func decodePrefix(_ bytes: [UInt8]) -> (item: CBOR, length: Int)? {
        var reader = CBORReader(bytes: bytes)
        guard let item = reader.item(depth: 0) else { return nil }
        return (item, reader.offset)
    }
}

/// The decoder's cursor. Every read is bounds-checked; counts are checked against the bytes
/// left before anything is reserved, so an item's claimed size never sizes memory.
struct CBORReader {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func take(_ count: UInt64) -> [UInt8]? {
        guard count <= UInt64(remaining) else { return nil }
        let end = offset + Int(count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    mutating func argument(_ info: UInt8) -> UInt64? {
        switch info {
        case 0..<24: return UInt64(info)
        case 24...27:
            guard let raw = take(1 << UInt64(info - 24)) else { return nil }
            return raw.reduce(0) { $0 << 8 | UInt64($1) }
        default: return nil
        }
    }

    mutating func item(depth: Int) -> CBOR? {
        guard depth <= CBOR.maximumDepth, let initial = byte() else { return nil }
        let major = initial >> 5
        let info = initial & 0x1f
        if info == 31 { return indefinite(major, depth: depth) }
        if major == 7 { return simple(info) }
        guard let argument = argument(info) else { return nil }
        switch major {
        case 0: return .unsigned(argument)
        case 1: return .negative(argument)
        case 2: return take(argument).map(CBOR.bytes)
        case 3:
            guard let raw = take(argument), let text = String(validating: raw, as: UTF8.self) else { return nil }
            return .text(text)
        case 4:
            // Each item takes at least one byte: a count past what is left cannot be.
            guard argument <= UInt64(remaining) else { return nil }
            var items: [CBOR] = []
            for _ in 0..<argument {
                guard let next = item(depth: depth + 1) else { return nil }
                items.append(next)
            }
            return .array(items)
        case 5:
            guard argument <= UInt64(remaining / 2) else { return nil }
            var pairs: [CBOR.Pair] = []
            for _ in 0..<argument {
                guard let key = item(depth: depth + 1), let value = item(depth: depth + 1) else { return nil }
                pairs.append(CBOR.Pair(key, value))
            }
            return .map(pairs)
        case 6: return item(depth: depth + 1).map { CBOR.tagged(argument, $0) }
        default: return nil
        }
    }

    mutating func simple(_ info: UInt8) -> CBOR? {
        switch info {
        case 0..<24: return .simple(info)
        case 24:
            // One-byte simple values below 32 are not well-formed (RFC 8949 §3.3).
            guard let value = byte(), value >= 32 else { return nil }
            return .simple(value)
        case 25: return take(2).map { .float(HalfFloat.value(UInt16($0[0]) << 8 | UInt16($0[1]))) }
        case 26:
            return take(4).map { raw in
                .float(Double(Float(bitPattern: raw.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })))
            }
        case 27: return take(8).map { .float(Double(bitPattern: $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })) }
        default: return nil
        }
    }

    /// An indefinite-length string, array or map, up to its break (0xff).
    mutating func indefinite(_ major: UInt8, depth: Int) -> CBOR? {
        var chunks: [UInt8] = []
        var items: [CBOR] = []
        var pairs: [CBOR.Pair] = []
        while true {
            guard offset < bytes.count else { return nil }
            if bytes[offset] == 0xff {
                offset += 1
                break
            }
            switch major {
            case 2, 3:
                // Chunks are definite strings of the same major type.
                guard bytes[offset] >> 5 == major, bytes[offset] & 0x1f != 31, let chunk = item(depth: depth + 1)
                else { return nil }
                switch chunk {
                case .bytes(let raw): chunks += raw
                case .text(let text): chunks += Array(text.utf8)
                default: return nil
                }
            case 4:
                guard let next = item(depth: depth + 1) else { return nil }
                items.append(next)
            case 5:
                guard let key = item(depth: depth + 1), let value = item(depth: depth + 1) else { return nil }
                pairs.append(CBOR.Pair(key, value))
            default: return nil
            }
        }
        switch major {
        case 2: return .bytes(chunks)
        case 3: return String(validating: chunks, as: UTF8.self).map(CBOR.text)
        case 4: return .array(items)
        default: return .map(pairs)
        }
    }
}
