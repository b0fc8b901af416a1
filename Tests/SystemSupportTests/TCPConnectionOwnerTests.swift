// The owner of a loopback TCP peer's socket from the kernel's tables (Platform's
// TCPConnectionOwner): real connections (a client socket made with another fsuid, IPv4, IPv6,
// an IPv4 client of an IPv6 listener), the real /proc text parsed line by line, and crafted
// tables: entries split anywhere, overlong and broken lines, TIME_WAIT and unheld sockets
// (which the kernel shows as uid 0), the byte bound, and 100,000 sockets read within the time bound.
import Foundation
import Glibc
import Platform
import Testing

@Suite("TCP connection owner (/proc/self/net/tcp)", .serialized)
struct TCPConnectionOwnerTests {
    /// A listening socket on `host` (an IPv4 or IPv6 literal), port chosen by the kernel.
    final class Listener {
        let fd: Int32
        let endpoint: TCPEndpoint

        init(_ host: String, family: Int32) throws {
            let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0)
            self.fd = fd
            if family == AF_INET6 {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                inet_pton(AF_INET6, host, &address.sin6_addr)
                var off: Int32 = 0
                setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    }
                }
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                inet_pton(AF_INET, host, &address.sin_addr)
                _ = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            try #require(listen(fd, 8) == 0)
            endpoint = try #require(Self.name(of: fd, peer: false))
        }

        deinit { close(fd) }

        /// `getsockname` or `getpeername` as a TCPEndpoint.
        static func name(of fd: Int32, peer: Bool) -> TCPEndpoint? {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let status = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length)
                }
            }
            guard status == 0 else { return nil }
            return withUnsafeBytes(of: storage) { raw -> TCPEndpoint? in
                let family = raw.load(as: sa_family_t.self)
                let port = UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
                if family == sa_family_t(AF_INET) { return TCPEndpoint(address: Array(raw[4..<8]), port: port) }
                if family == sa_family_t(AF_INET6) { return TCPEndpoint(address: Array(raw[8..<24]), port: port) }
                return nil
            }
        }

        /// A client connected to this listener from a socket of `family` made with fsuid `uid`
        /// (setfsuid is per thread: the socket's owner is `uid`, the test keeps its rights), and
        /// the two ends as the server sees them (peer, ours).
        func connect(family: Int32, to host: String, asUID uid: UInt32) throws -> (
            client: Int32, accepted: Int32, peer: TCPEndpoint, local: TCPEndpoint
        ) {
            // glibc's setfsuid(2) (sys/fsuid.h is not in Swift's Glibc module): this thread only.
            typealias SetFSUID = @convention(c) (UInt32) -> Int32
            let symbol = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "setfsuid"))
            let setfsuid = unsafeBitCast(symbol, to: SetFSUID.self)
            let previous = setfsuid(uid)
            let client = socket(family, Int32(SOCK_STREAM.rawValue), 0)
            _ = setfsuid(UInt32(bitPattern: previous))
            try #require(client >= 0)
            let connected: Int32
            if family == AF_INET6 {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_port = endpoint.port.bigEndian
                inet_pton(AF_INET6, host, &address.sin6_addr)
                connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                    }
                }
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = endpoint.port.bigEndian
                inet_pton(AF_INET, host, &address.sin_addr)
                connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            try #require(connected == 0, "connect: errno \(errno)")
            let accepted = accept(fd, nil, nil)
            try #require(accepted >= 0)
            let peer = try #require(Self.name(of: accepted, peer: true))
            let local = try #require(Self.name(of: accepted, peer: false))
            return (client, accepted, peer, local)
        }
    }

    @Test(
        "a real connection: the uid of the client's socket (made as 65534) for IPv4, IPv6, and an IPv4 client of a dual-stack IPv6 listener; a stranger's port is not it"
    )
    func realConnections() throws {
        try #require(getuid() == 0, "making a socket as another uid (setfsuid) needs root")
        let cases: [(listen: String, listenFamily: Int32, connect: String, family: Int32)] = [
            ("127.0.0.1", AF_INET, "127.0.0.1", AF_INET),
            ("::1", AF_INET6, "::1", AF_INET6),
            ("::", AF_INET6, "127.0.0.1", AF_INET),
            ("::", AF_INET6, "::ffff:127.0.0.1", AF_INET6),
        ]
        for test in cases {
            let listener = try Listener(test.listen, family: test.listenFamily)
            let connection = try listener.connect(family: test.family, to: test.connect, asUID: 65534)
            defer {
                close(connection.client)
                close(connection.accepted)
            }
            let answer = TCPConnectionOwner.owner(ofClient: connection.peer, connectedTo: connection.local)
            #expect(answer == .owner(uid: 65534), "\(test): \(answer)")
            var stranger = connection.peer
            stranger.port = stranger.port == 1 ? 2 : 1
            #expect(TCPConnectionOwner.owner(ofClient: stranger, connectedTo: connection.local) == .notFound)
        }
    }

    @Test("every line of the real tables parses (but the header), and the parse agrees with the kernel's own fields")
    func realTables() throws {
        let listener = try Listener("127.0.0.1", family: AF_INET)
        let connection = try listener.connect(family: AF_INET, to: "127.0.0.1", asUID: getuid())
        defer {
            close(connection.client)
            close(connection.accepted)
        }
        for table in TCPConnectionOwner.tables {
            // Read to the end: procfs reports size 0, and a busy machine's table is many pages
            // (FileManager's one read stopped at the first pages, before this test's sockets).
            guard let handle = FileHandle(forReadingAtPath: table), let text = try handle.readToEnd() else { continue }
            let lines = text.split(separator: UInt8(ascii: "\n"))
            try #require(lines.count >= 1)
            var entries: [TCPTableEntry] = []
            for (number, line) in lines.enumerated() {
                let entry = Array(line).withUnsafeBytes { TCPTableScanner.parse(line: $0) }
                if number == 0 {
                    #expect(entry == nil, "the header of \(table)")
                } else {
                    #expect(entry != nil, "\(table) line \(number): \(String(decoding: line, as: UTF8.self))")
                    if let entry { entries.append(entry) }
                }
            }
            if table.hasSuffix("tcp") {
                #expect(entries.contains { $0.local == listener.endpoint && $0.state == 0x0A })
                #expect(
                    entries.contains {
                        $0.local == connection.peer && $0.remote == connection.local && $0.state == 0x01
                            && $0.inode != 0
                    })
            }
        }
    }

    // MARK: - Crafted tables

    static let client = TCPEndpoint(address: [127, 0, 0, 1], port: 40000)
    static let server = TCPEndpoint(address: [127, 0, 0, 1], port: 9720)
    static let header =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

    /// A line as the kernel prints it (the IPv4 form), for `local` → `remote`.
    static func line(
        _ number: Int = 3, local: String = "0100007F:9C40", remote: String = "0100007F:25F8", state: String = "01",
        uid: String = "65534", inode: String = "123456"
    ) -> String {
        "\(String(repeating: " ", count: max(0, 4 - String(number).count)))\(number): \(local) \(remote) \(state) "
            + "00000000:00000000 00:00000000 00000000 \(uid)        0 \(inode) 1 0000000000000000 20 4 30 10 -1"
            + String(repeating: " ", count: 20) + "\n"
    }

    /// Scans `text` fed in pieces of `piece` bytes.
    static func scan(_ text: String, piece: Int, client: TCPEndpoint = client, server: TCPEndpoint = server)
        -> UInt32?
    {
        var scanner = TCPTableScanner(client: client, server: server)
        let bytes = Array(text.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + piece)
            if let uid = bytes[start..<end].withUnsafeBytes({ scanner.scan($0) }) { return uid }
            start = end
        }
        return scanner.finish()
    }

    @Test("the client's line is found whatever the pieces (1 byte to all at once), with or without a last newline")
    func pieces() {
        let text =
            Self.header + Self.line(0, local: "0100007F:25F8", remote: "00000000:0000", state: "0A", uid: "0")
            + Self.line(1, local: "0100007F:25F8", remote: "0100007F:9C40", uid: "0") + Self.line(2)
        for piece in [1, 2, 3, 7, 64, 149, 150, 151, 4096] {
            #expect(Self.scan(text, piece: piece) == 65534, "pieces of \(piece)")
            #expect(Self.scan(String(text.dropLast()), piece: piece) == 65534, "no last newline, pieces of \(piece)")
        }
    }

    @Test(
        "not the owner: a TIME_WAIT entry (uid 0, inode 0), an unheld socket (inode 0) in any state, a listening socket, the server's own socket; the held socket after them is"
    )
    func unheldEntries() {
        let timeWait = Self.line(1, state: "06", uid: "0", inode: "0")
        let finWaitTimeWait = Self.line(2, state: "05", uid: "0", inode: "0")
        let listening = Self.line(3, remote: "00000000:0000", state: "0A", uid: "0")
        let ours = Self.line(4, local: "0100007F:25F8", remote: "0100007F:9C40", uid: "0")
        for line in [timeWait, finWaitTimeWait, listening, ours] {
            #expect(Self.scan(Self.header + line, piece: 4096) == nil, "\(line)")
        }
        #expect(Self.scan(Self.header + timeWait + finWaitTimeWait + ours + Self.line(5), piece: 4096) == 65534)
        // A half-closed client (FIN_WAIT2, still held) is the owner.
        #expect(Self.scan(Self.header + Self.line(6, state: "05"), piece: 4096) == 65534)
    }

    @Test("IPv6 lines: ::1, and an IPv4-mapped client of an IPv4 server (and the reverse) match as one endpoint")
    func ipv6() {
        let loopback6 = TCPEndpoint(address: Array(repeating: 0, count: 15) + [1], port: 40000)
        let server6 = TCPEndpoint(address: Array(repeating: 0, count: 15) + [1], port: 9720)
        let v6 = Self.line(
            local: "00000000000000000000000001000000:9C40", remote: "00000000000000000000000001000000:25F8")
        #expect(Self.scan(Self.header + v6, piece: 100, client: loopback6, server: server6) == 65534)
        #expect(Self.scan(Self.header + v6, piece: 100) == nil, "::1 is not 127.0.0.1")
        let mapped = Self.line(
            local: "0000000000000000FFFF00000100007F:9C40", remote: "0000000000000000FFFF00000100007F:25F8")
        #expect(Self.scan(Self.header + mapped, piece: 100) == 65534)
        let mappedClient = TCPEndpoint(
            address: Array(repeating: 0, count: 10) + [0xff, 0xff, 127, 0, 0, 1], port: 40000)
        #expect(Self.scan(Self.header + Self.line(), piece: 100, client: mappedClient) == 65534)
    }

    @Test(
        "broken text finds nothing and traps on nothing: cut lines, bad hex, uid past 32 bits, inode past 64, odd address lengths, NULs, an overlong line that ends like the right one"
    )
    func craftedText() {
        let right = Self.line()
        let broken: [String] = [
            String(right.prefix(40)) + "\n",
            Self.line(local: "0100007G:9C40"),
            Self.line(local: "0100007F:9C4"),
            Self.line(local: "0100007F9C40"),
            Self.line(local: "100007F:9C40"),
            Self.line(local: "0100007F:9C40:"),
            Self.line(local: "0000000000000000FFFF00000100007F:9C40"),  // remote stays IPv4: lengths differ
            Self.line(uid: "4294967296"),
            Self.line(uid: "-1"),
            Self.line(uid: "99999999999999999999999"),
            Self.line(inode: "18446744073709551616"),
            Self.line(state: "1"),
            Self.line(state: "XY"),
            right.replacingOccurrences(of: " 65534 ", with: " 65\u{0}34 "),
            String(repeating: "A", count: 600) + " " + right,
            String(repeating: " ", count: 5000) + right,
            "\n\n\n",
            "",
        ]
        for text in broken {
            for piece in [1, 13, 4096] {
                #expect(Self.scan(Self.header + text, piece: piece) == nil, "\(text.prefix(80)) in pieces of \(piece)")
            }
        }
        // After an overlong line, the next good one is found.
        #expect(Self.scan(String(repeating: "x", count: 10_000) + "\n" + right, piece: 777) == 65534)
        // The largest uid.
        #expect(Self.scan(Self.line(uid: "4294967295"), piece: 64) == 4_294_967_295)
        // Random bytes, and random cuts of real lines, never trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let length = Int.random(in: 0..<400, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator) {
                bytes = Array(right.utf8)
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255, using: &generator)
                }
            }
            var scanner = TCPTableScanner(client: Self.client, server: Self.server)
            _ = bytes.withUnsafeBytes { scanner.scan($0) }
            _ = scanner.finish()
        }
    }

    @Test(
        "files: a table past the byte bound is unreadable (not read whole), a missing tcp6 is no error, an unreadable table says which; 100,000 sockets with the client last are read within 2 s, in 64 KiB pieces"
    )
    func bounds() throws {
        let directory = NSTemporaryDirectory() + "recd-tcp-owner-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var big = Self.header
        for number in 0..<100_000 {
            big += Self.line(number, local: String(format: "0200007F:%04X", number % 65536), uid: "1000")
        }
        big += Self.line(100_000)
        try big.write(toFile: directory + "/tcp", atomically: true, encoding: .utf8)
        let began = Date()
        let found = TCPConnectionOwner.owner(
            ofClient: Self.client, connectedTo: Self.server, tables: [directory + "/tcp", directory + "/tcp6"])
        let took = Date().timeIntervalSince(began)
        #expect(found == .owner(uid: 65534), "\(found)")
        #expect(took < 2, "100,000 lines took \(took) s")
        let bounded = TCPConnectionOwner.owner(
            ofClient: Self.client, connectedTo: Self.server, bounds: .init(maxBytesPerTable: 1 << 20),
            tables: [directory + "/tcp"])
        guard case .unreadable(let why) = bounded else {
            Issue.record("a table past 1 MiB: \(bounded)")
            return
        }
        #expect(why.contains("larger than 1 MiB"), "\(why)")
        let tooSlow = TCPConnectionOwner.owner(
            ofClient: Self.client, connectedTo: Self.server, bounds: .init(maxSeconds: 0), tables: [directory + "/tcp"])
        #expect(tooSlow != .owner(uid: 65534), "no time: \(tooSlow)")
        mkdir(directory + "/dir", 0o755)
        let unreadable = TCPConnectionOwner.owner(
            ofClient: Self.client, connectedTo: Self.server, tables: [directory + "/dir"])
        guard case .unreadable(let text) = unreadable else {
            Issue.record("a directory as the table: \(unreadable)")
            return
        }
        #expect(text.contains(directory + "/dir"), "\(text)")
    }
}
