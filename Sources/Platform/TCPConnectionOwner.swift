// Who on this machine holds the other end of a TCP connection: the uid of the client's socket,
// from the kernel's socket tables (/proc/self/net/tcp and tcp6), as identd finds it. A
// loopback peer's address and port name its socket there: the entry whose local end is the
// peer's and whose remote end is ours. `SO_PEERCRED` is the Unix-socket answer; TCP has none.
//
// The tables are outside bytes of unbounded size (a line per socket: 150 bytes, 15 MB on a
// box with 100,000 sockets), so they are read in 64 KiB pieces and scanned as they come,
// stopping at the match, within a byte and a time bound; a line is at most 512 bytes (longer
// ones are skipped whole) and parsed without trapping on any text (`TCPTableScanner`).
//
// /proc/self/net, not /proc/net: recd.service's ProcSubset=pid hides /proc/net, never a
// process's own directory. The tables are those of the caller's network namespace, the one its
// listener's peers are in. Any thread; it blocks for the reading (milliseconds; at most
// `Bounds.maxSeconds`), so never recd's control thread.

/// One end of a TCP connection: an IP address (4 bytes for IPv4, 16 for IPv6) and a port.
public struct TCPEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var address: [UInt8]
    public var port: UInt16

    public init(address: [UInt8], port: UInt16) {
        self.address = address
        self.port = port
    }

    /// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as its IPv4 address: a client's socket
    /// of one family and a server's of the other name the same connection so (an IPv4 client
    /// of a listener on `[::]`).
    public var normalized: TCPEndpoint {
        let mapped =
            address.count == 16 && address[0..<10].allSatisfy { $0 == 0 } && address[10] == 0xff
            && address[11] == 0xff
        return mapped ? TCPEndpoint(address: Array(address[12..<16]), port: port) : self
    }

    public var description: String {
        if address.count == 4 { return address.map(String.init).joined(separator: ".") + ":\(port)" }
        var groups: [String] = []
        var index = 0
        while index + 1 < address.count {
            groups.append(String(UInt16(address[index]) << 8 | UInt16(address[index + 1]), radix: 16))
            index += 2
        }
        return "[\(groups.joined(separator: ":"))]:\(port)"
    }
}

/// Finds the owner of a loopback peer's socket. Any thread but a real-time or the control one.
public enum TCPConnectionOwner {
    /// What the tables said.
    public enum Answer: Sendable, Equatable {
        /// The uid the kernel records for the client's socket (whoever made it).
        case owner(uid: UInt32)
        /// No socket on this machine is the connection's other end, or only one nobody holds
        /// any more (a closed socket's TIME_WAIT entry, which the kernel shows as uid 0).
        case notFound
        /// The tables could not be read within the bounds; the text says which and why.
        case unreadable(String)
    }

    /// How much one lookup may read and for how long.
    public struct Bounds: Sendable, Equatable {
        /// Bytes read from each table at most: past it the lookup gives up (`unreadable`).
        public var maxBytesPerTable: Int
        /// Seconds the whole lookup may take.
        public var maxSeconds: Double

        /// 64 MiB (over 400,000 sockets) and 2 s.
        public init(maxBytesPerTable: Int = 64 << 20, maxSeconds: Double = 2) {
            self.maxBytesPerTable = maxBytesPerTable
            self.maxSeconds = maxSeconds
        }
    }

    /// The kernel's TCP tables of this process's network namespace.
    public static let tables = ["/proc/self/net/tcp", "/proc/self/net/tcp6"]

    /// The piece read at once.
    static let chunkBytes = 64 * 1024

    /// The owner of the socket at `client` connected to `server` (our end). `tables`: where to
    /// look (the kernel's by default; tests give files). An IPv4 client (or an IPv4-mapped one)
    /// is looked for in both tables (its socket may be of either family); an IPv6 one in tcp6.
    public static func owner(
        ofClient client: TCPEndpoint, connectedTo server: TCPEndpoint, bounds: Bounds = Bounds(),
        tables: [String] = TCPConnectionOwner.tables
    ) -> Answer {
        let deadline = SystemClock.monotonicSeconds() + bounds.maxSeconds
        let searched = client.normalized.address.count == 4 ? tables : tables.filter { $0.hasSuffix("6") }
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        for table in searched {
            var scanner = TCPTableScanner(client: client, server: server)
            let file: OwnedFile
            do throws(SystemError) {
                file = try OwnedFile(table, .readOnly)
            } catch {
                // A kernel without IPv6 has no tcp6: nothing to find there. (No tcp at all is
                // no procfs: unreadable, not "no such socket".)
                if error.errno == .noSuchFileOrDirectory && table.hasSuffix("6") { continue }
                return .unreadable("cannot read \(table): \(error.message)")
            }
            var read = 0
            while true {
                guard read < bounds.maxBytesPerTable else {
                    return .unreadable("\(table) is larger than \(bounds.maxBytesPerTable >> 20) MiB")
                }
                guard SystemClock.monotonicSeconds() < deadline else {
                    return .unreadable("reading \(table) took longer than \(bounds.maxSeconds) s")
                }
                let wanted = min(buffer.count, bounds.maxBytesPerTable - read)
                let result = buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(SystemError) in try file.read(into: raw.baseAddress!, count: wanted) }
                }
                let count: Int
                switch result {
                case .success(let got): count = got
                case .failure(let error): return .unreadable("cannot read \(table): \(error.message)")
                }
                if count == 0 {
                    if let uid = scanner.finish() { return .owner(uid: uid) }
                    break
                }
                read += count
                let found = buffer.withUnsafeBytes { scanner.scan(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                if let found { return .owner(uid: found) }
            }
        }
        return .notFound
    }
}

/// One line of /proc/net/tcp or tcp6.
public struct TCPTableEntry: Sendable, Equatable {
    public var local: TCPEndpoint
    public var remote: TCPEndpoint
    /// The TCP state as the kernel numbers it (01 established, 06 TIME_WAIT, 0A listening).
    public var state: UInt8
    public var uid: UInt32
    /// The socket's inode: 0 for a socket no process holds (TIME_WAIT, a request, an orphan).
    public var inode: UInt64

    public init(local: TCPEndpoint, remote: TCPEndpoint, state: UInt8, uid: UInt32, inode: UInt64) {
        self.local = local
        self.remote = remote
        self.state = state
        self.uid = uid
        self.inode = inode
    }

    static let timeWait: UInt8 = 0x06
    static let listening: UInt8 = 0x0A

    /// Whether a process holds this socket: only then is its uid someone's who can read an
    /// answer (a TIME_WAIT entry shows uid 0, and so does the TIME_WAIT form a closed client's
    /// FIN_WAIT2 takes).
    public var isHeld: Bool { inode != 0 && state != Self.timeWait && state != Self.listening }
}

/// Scans the text of /proc/net/tcp or tcp6, fed in pieces of any size, for the client's
/// socket of one connection. Total: any bytes are scanned without trapping; memory is one
/// line (`maxLineBytes`) beyond the pieces themselves.
///
/// A line: `sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...`, the addresses as
/// hex of the kernel's 32-bit words in memory order, the port as hex.
public struct TCPTableScanner: Sendable {
    /// The longest line kept (the kernel's are 150 bytes): a longer one is skipped whole.
    public static let maxLineBytes = 512

    private let client: TCPEndpoint
    private let server: TCPEndpoint
    /// The client's port as the table prints it, in lower case: 4 hex digits.
    private let portDigits: [UInt8]
    /// The start of a line whose end has not come yet.
    private var partial: [UInt8] = []
    /// The line now being read is longer than `maxLineBytes`: skip it up to its newline.
    private var skipping = false

    public init(client: TCPEndpoint, server: TCPEndpoint) {
        self.client = client.normalized
        self.server = server.normalized
        let hex = Array("0123456789abcdef".utf8)
        portDigits = (0..<4).map { hex[Int(client.port >> (12 - 4 * UInt16($0)) & 0xF)] }
    }

    /// Scans the next piece; the uid of the client's socket once its line is complete.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) -> UInt32? {
        var start = 0
        while start < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[start...])
            guard let length = Syscall.firstOffset(of: UInt8(ascii: "\n"), in: rest) else {
                keep(rest)
                return nil
            }
            start += length + 1
            if let uid = endLine(UnsafeRawBufferPointer(rebasing: rest[..<length])) { return uid }
        }
        return nil
    }

    /// The end of the text: the last line, if it had no newline.
    public mutating func finish() -> UInt32? {
        endLine(UnsafeRawBufferPointer(start: nil, count: 0))
    }

    private mutating func keep(_ bytes: UnsafeRawBufferPointer) {
        guard !skipping else { return }
        if partial.count + bytes.count > Self.maxLineBytes {
            partial.removeAll(keepingCapacity: true)
            skipping = true
        } else {
            partial.append(contentsOf: bytes)
        }
    }

    private mutating func endLine(_ tail: UnsafeRawBufferPointer) -> UInt32? {
        defer {
            partial.removeAll(keepingCapacity: true)
            skipping = false
        }
        if skipping { return nil }
        let entry: TCPTableEntry?
        if partial.isEmpty {
            guard tail.count <= Self.maxLineBytes, mayBeClient(tail) else { return nil }
            entry = Self.parse(line: tail)
        } else {
            guard partial.count + tail.count <= Self.maxLineBytes else { return nil }
            partial.append(contentsOf: tail)
            entry = partial.withUnsafeBytes { mayBeClient($0) ? Self.parse(line: $0) : nil }
        }
        guard let entry, entry.isHeld, entry.local.normalized == client, entry.remote.normalized == server else {
            return nil
        }
        return entry.uid
    }

    /// Whether the line's second field ends in the client's port (`:PPPP`, hex in either
    /// case): the one cheap test that passes every line `parse` would match (a line per
    /// socket of the box, most of them someone else's), so only those few are parsed.
    private func mayBeClient(_ line: UnsafeRawBufferPointer) -> Bool {
        func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var index = 0
        for _ in 0..<2 {
            while index < line.count && isSpace(line[index]) { index += 1 }
            while index < line.count && !isSpace(line[index]) { index += 1 }
        }
        guard index >= 5, line[index - 5] == UInt8(ascii: ":") else { return false }
        for digit in 0..<4 {
            // ASCII lower case: digits are unchanged, A-F become a-f.
            guard line[index - 4 + digit] | 0x20 == portDigits[digit] else { return false }
        }
        return true
    }

    /// One line of the table, nil for the header or anything that is not an entry.
    public static func parse(line: UnsafeRawBufferPointer) -> TCPTableEntry? {
        // The first ten fields, as ranges of the line.
        var fields: [Range<Int>] = []
        fields.reserveCapacity(10)
        var index = 0
        while index < line.count && fields.count < 10 {
            while index < line.count && (line[index] == UInt8(ascii: " ") || line[index] == UInt8(ascii: "\t")) {
                index += 1
            }
            let start = index
            while index < line.count && line[index] != UInt8(ascii: " ") && line[index] != UInt8(ascii: "\t") {
                index += 1
            }
            if index > start { fields.append(start..<index) }
        }
        guard fields.count == 10 else { return nil }
        func field(_ number: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: line[fields[number]]) }
        guard let local = endpoint(field(1)), let remote = endpoint(field(2)),
            local.address.count == remote.address.count, field(3).count == 2,
            let state = hex(field(3)).map(UInt8.init(truncatingIfNeeded:)),
            let uid = decimal(field(7), max: UInt64(UInt32.max)).map(UInt32.init(truncatingIfNeeded:)),
            let inode = decimal(field(9), max: UInt64.max)
        else { return nil }
        return TCPTableEntry(local: local, remote: remote, state: state, uid: uid, inode: inode)
    }

    /// `ADDRESS:PORT`: 8 or 32 hex digits (the kernel's 32-bit words as they lie in memory,
    /// printed as numbers: byte order reversed on a little-endian machine), 4 for the port.
    static func endpoint(_ text: UnsafeRawBufferPointer) -> TCPEndpoint? {
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon == 8 || colon == 32,
            text.count - colon - 1 == 4,
            let port = hex(UnsafeRawBufferPointer(rebasing: text[(colon + 1)...]))
        else { return nil }
        var address: [UInt8] = []
        address.reserveCapacity(colon / 2)
        var word = 0
        while word < colon {
            guard let value = hex(UnsafeRawBufferPointer(rebasing: text[word..<(word + 8)])) else { return nil }
            withUnsafeBytes(of: UInt32(truncatingIfNeeded: value)) { address.append(contentsOf: $0) }
            word += 8
        }
        return TCPEndpoint(address: address, port: UInt16(truncatingIfNeeded: port))
    }

    /// 1 to 8 hex digits.
    static func hex(_ text: UnsafeRawBufferPointer) -> UInt32? {
        guard (1...8).contains(text.count) else { return nil }
        var value: UInt32 = 0
        for byte in text {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Decimal digits up to `max`.
    static func decimal(_ text: UnsafeRawBufferPointer, max: UInt64) -> UInt64? {
        guard (1...20).contains(text.count) else { return nil }
        var value: UInt64 = 0
        for byte in text {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(byte &- UInt8(ascii: "0")))
            guard !overflow, !carry, sum <= max else { return nil }
            value = sum
        }
        return value
    }
}
