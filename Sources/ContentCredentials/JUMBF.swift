// JUMBF (ISO/IEC 19566-5), the boxes a C2PA manifest store is made of: ISO BMFF boxes (a 32-bit
// big-endian size including the 8-byte header, a four-character type, the payload). A superbox
// (`jumb`) holds a description box (`jumd`: a 16-byte type UUID, toggles, a NUL-terminated
// label) and then its content boxes (`cbor`, `json`, ... or more superboxes).
//
// Pure values: any thread. The reader is total: any bytes give boxes or nil, nothing read past
// the bytes given, nesting at most `JUMBF.maximumDepth` deep.

/// One JUMBF box: a superbox with its description and children, or a content box.
public indirect enum JUMBFBox: Sendable, Equatable {
    case superbox(type: [UInt8], label: String, children: [JUMBFBox])
    /// A content box: its four-character type and payload.
    case content(type: String, payload: [UInt8])

    /// The toggles C2PA uses: requestable, label present.
    static let toggles: UInt8 = 0x03

    /// A superbox of type `type` (the 16 bytes of its UUID) labelled `label`.
    public static func superbox(_ type: [UInt8], _ label: String, _ children: [JUMBFBox]) -> JUMBFBox {
        .superbox(type: type, label: label, children: children)
    }

    /// The whole box, header included.
    public var encoded: [UInt8] {
        switch self {
        case .content(let type, let payload): return JUMBF.box(type, payload)
        case .superbox: return JUMBF.box("jumb", payload)
        }
    }

    /// The box without its own 8-byte header: for a superbox its description box and children
    /// (what C2PA hashes when a claim refers to an assertion).
    public var payload: [UInt8] {
        switch self {
        case .content(_, let payload): return payload
        case .superbox(let type, let label, let children):
            var description = type
            description.append(JUMBFBox.toggles)
            description += Array(label.utf8) + [0]
            var out = JUMBF.box("jumd", description)
            for child in children { out += child.encoded }
            return out
        }
    }

    /// The label of a superbox; nil for a content box.
    public var label: String? {
        if case .superbox(_, let label, _) = self { return label }
        return nil
    }

    /// The children of a superbox; empty for a content box.
    public var children: [JUMBFBox] {
        if case .superbox(_, _, let children) = self { return children }
        return []
    }

    /// The child superbox labelled `label`.
    public func child(_ label: String) -> JUMBFBox? { children.first { $0.label == label } }
}

public enum JUMBF {
    public static let maximumDepth = 16

    /// A C2PA box type UUID: four ASCII letters, then the ISO suffix 0011-0010-8000-00AA00389B71.
    public static func c2paType(_ letters: String) -> [UInt8] {
        Array(letters.utf8.prefix(4)) + [0x00, 0x11, 0x00, 0x10, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = UInt32(truncatingIfNeeded: 8 + payload.count)
        return CBOR.bigEndian(UInt64(size), bytes: 4) + Array(type.utf8.prefix(4)) + payload
    }

    /// The boxes of `bytes` (a sequence of whole boxes and nothing else); nil when they are not.
    public static func parse(_ bytes: [UInt8]) -> [JUMBFBox]? { parse(bytes[...], depth: 0) }

    static func parse(_ bytes: ArraySlice<UInt8>, depth: Int) -> [JUMBFBox]? {
        guard depth <= maximumDepth else { return nil }
        var boxes: [JUMBFBox] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard bytes.endIndex - offset >= 8 else { return nil }
            let size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8, size <= bytes.endIndex - offset else { return nil }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let payload = bytes[offset + 8..<offset + size]
            offset += size
            guard type == "jumb" else {
                boxes.append(.content(type: type, payload: Array(payload)))
                continue
            }
            guard let inner = parse(payload, depth: depth + 1), case .content("jumd", let description)? = inner.first,
                description.count >= 18
            else { return nil }
            let labelBytes = description[17...].prefix { $0 != 0 }
            guard let label = String(validating: labelBytes, as: UTF8.self) else { return nil }
            boxes.append(.superbox(type: Array(description[0..<16]), label: label, children: Array(inner.dropFirst())))
        }
        return boxes
    }
}
