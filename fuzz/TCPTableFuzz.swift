// libFuzzer target: bytes as the kernel's TCP socket table (/proc/self/net/tcp or tcp6), the
// text the HTTP listener's caller lookup reads (Platform's TCPTableScanner and
// TCPConnectionOwner). The first two bytes choose the piece size the rest is fed in; the
// answer must be the same in pieces as all at once (a line split anywhere is the same line),
// and every line the parser accepts must hold addresses of 4 or 16 bytes. Through a file (one
// input in eight), the bounded reader (TCPConnectionOwner.owner) must agree with the scanner too.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Glibc
import Platform

/// A failed check stops the fuzzer with its message (precondition's is dropped at -O).
func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// The connections looked for: an IPv4 one (127.0.0.1:40000 → :9720) and an IPv6 one.
let targets: [(TCPEndpoint, TCPEndpoint)] = [
    (TCPEndpoint(address: [127, 0, 0, 1], port: 40000), TCPEndpoint(address: [127, 0, 0, 1], port: 9720)),
    (
        TCPEndpoint(address: Array(repeating: 0, count: 15) + [1], port: 0x9C40),
        TCPEndpoint(address: Array(repeating: 0, count: 15) + [1], port: 0x25F8)
    ),
]

/// The file the bounded reader reads the input from (removed when the fuzzer exits).
let tablePath: String = {
    atexit { unlink(tablePath) }
    return "/tmp/recd-tcptable-fuzz-\(getpid())"
}()

func scan(_ bytes: UnsafeRawBufferPointer, piece: Int, client: TCPEndpoint, server: TCPEndpoint) -> UInt32? {
    var scanner = TCPTableScanner(client: client, server: server)
    var start = 0
    while start < bytes.count {
        let end = min(bytes.count, start + piece)
        if let uid = scanner.scan(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) { return uid }
        start = end
    }
    return scanner.finish()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func tcpTableFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let piece = Int(data[0]) << 8 | Int(data[1]) + 1
    let text = UnsafeRawBufferPointer(start: data + 2, count: size - 2)

    for (client, server) in targets {
        let whole = scan(text, piece: max(1, text.count), client: client, server: server)
        let inPieces = scan(text, piece: piece, client: client, server: server)
        check(
            whole == inPieces,
            "whole \(String(describing: whole)), in pieces of \(piece) \(String(describing: inPieces))")
    }

    // Every line the parser accepts is an entry of one family.
    var start = 0
    while start < text.count {
        var end = start
        while end < text.count && text[end] != UInt8(ascii: "\n") { end += 1 }
        if let entry = TCPTableScanner.parse(line: UnsafeRawBufferPointer(rebasing: text[start..<end])) {
            check(
                [4, 16].contains(entry.local.address.count) && entry.local.address.count == entry.remote.address.count,
                "an entry with addresses of \(entry.local.address.count) and \(entry.remote.address.count) bytes")
        }
        start = end + 1
    }

    // The bounded reader over the same bytes as a file, in its own 64 KiB pieces: one input in
    // eight (by the piece size's low bits), for a file costs more than the scan it wraps.
    guard data[1] & 7 == 0 else { return 0 }
    let fd = open(tablePath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    check(fd >= 0, "open \(tablePath): errno \(errno)")
    var written = 0
    while written < text.count {
        let n = write(fd, text.baseAddress! + written, text.count - written)
        check(n > 0, "write: errno \(errno)")
        written += n
    }
    close(fd)
    let (client, server) = targets[0]
    let read = TCPConnectionOwner.owner(ofClient: client, connectedTo: server, tables: [tablePath])
    let expected = scan(text, piece: max(1, text.count), client: client, server: server)
    switch read {
    case .owner(let uid): check(expected == uid, "the reader found \(uid), the scanner \(String(describing: expected))")
    case .notFound: check(expected == nil, "the reader found nothing, the scanner \(String(describing: expected))")
    case .unreadable(let why): fatalError("a small table unreadable: \(why)")
    }
    return 0
}
