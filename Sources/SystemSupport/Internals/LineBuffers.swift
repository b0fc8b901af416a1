// Byte framing for the control server: input bytes → lines, lines → output bytes.
// Pure value types with no I/O, so the framing rules are testable on their own.
import Glibc

/// Splits a client's byte stream into lines. Owned by one connection on the control thread.
///
/// A line ends at `\n`; one `\r` before it is dropped too, so `nc`/telnet users work. Lines
/// are decoded as UTF-8 with invalid sequences replaced by U+FFFD, so no byte sequence can
/// fail. A line longer than `maxLineBytes` (not counting the terminator) is reported as soon
/// as that is certain, without waiting for its end.
struct LineAssembler {
    enum Next: Equatable {
        case line(String)
        /// No complete line is buffered.
        case needMore
        /// The current line exceeds the limit; the connection should be rejected.
        case tooLong
    }

    let maxLineBytes: Int
    private var storage: [UInt8] = []
    /// First byte not yet handed out as part of a line.
    private var start = 0
    /// Bytes in `start..<scanned` are known to hold no newline.
    private var scanned = 0
    /// Position in the whole stream of `storage[0]`.
    private var storageOffset = 0

    init(maxLineBytes: Int) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes of the incomplete line buffered so far.
    var pendingByteCount: Int { storage.count - start }

    /// Bytes appended since the stream began: the stream position of the next byte.
    var appendedByteCount: Int { storageOffset + storage.count }

    /// Stream position of the first byte not yet handed out: every byte before it belongs to a
    /// line that `nextLine` (or `takeRemainder`) returned, terminator included.
    var consumedByteCount: Int { storageOffset + start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        storage.append(contentsOf: bytes)
    }

    mutating func append(_ bytes: [UInt8]) {
        storage.append(contentsOf: bytes)
    }

    /// Takes the next complete line out of the buffer.
    mutating func nextLine() -> Next {
        guard let newline = Self.firstNewline(in: storage, from: scanned) else {
            scanned = storage.count
            // One byte of slack: the line may still end in "\r\n".
            if pendingByteCount > maxLineBytes + 1 { return .tooLong }
            compact()
            return .needMore
        }
        var end = newline
        if end > start && storage[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        if end - start > maxLineBytes { return .tooLong }
        let line = String(decoding: storage[start..<end], as: UTF8.self)
        start = newline + 1
        scanned = start
        return .line(line)
    }

    /// `memchr`: a byte-wise Swift loop is slow in debug builds, and lines can be 64 KiB.
    private static func firstNewline(in bytes: [UInt8], from offset: Int) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            guard offset < buffer.count, let base = buffer.baseAddress else { return nil }
            guard let found = memchr(base + offset, Int32(UInt8(ascii: "\n")), buffer.count - offset) else {
                return nil
            }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
    }

    /// At end of input: the unterminated tail as a last line, if there is one.
    mutating func takeRemainder() -> String? {
        defer {
            storageOffset += storage.count
            storage.removeAll()
            start = 0
            scanned = 0
        }
        guard pendingByteCount > 0, pendingByteCount <= maxLineBytes + 1 else { return nil }
        var end = storage.count
        if storage[end - 1] == UInt8(ascii: "\r") { end -= 1 }
        return String(decoding: storage[start..<end], as: UTF8.self)
    }

    /// Drops consumed bytes once they are worth moving.
    private mutating func compact() {
        if start == storage.count {
            storageOffset += storage.count
            storage.removeAll(keepingCapacity: storage.capacity <= 256 * 1024)
            start = 0
            scanned = 0
        } else if start >= 64 * 1024 && start * 2 >= storage.count {
            storageOffset += start
            storage.removeFirst(start)
            scanned -= start
            start = 0
        }
    }
}

/// Bytes queued for one client. Owned by one connection on the control thread.
struct OutputBuffer {
    private var storage: [UInt8] = []
    /// First byte not yet written to the socket.
    private var start = 0

    /// Bytes still to be written.
    var pendingByteCount: Int { storage.count - start }
    var isEmpty: Bool { start == storage.count }

    /// Queues `line` and its terminating newline.
    mutating func append(line: String) {
        storage.append(contentsOf: line.utf8)
        storage.append(UInt8(ascii: "\n"))
    }

    /// Runs `body` over the pending bytes; `body` returns how many it wrote.
    mutating func drain(_ body: (UnsafeRawBufferPointer) -> Int) -> Int {
        let written = storage.withUnsafeBytes { all in
            body(UnsafeRawBufferPointer(rebasing: all[start...]))
        }
        start += written
        if start == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity <= 256 * 1024)
            start = 0
        } else if start >= 256 * 1024 && start * 2 >= storage.count {
            storage.removeFirst(start)
            start = 0
        }
        return written
    }

    /// Keeps only the rest of the line now being written, so that whatever is appended next
    /// starts on a line boundary for the reader. Used when a slow reader is cut off.
    mutating func truncateAfterCurrentLine() {
        guard start > 0, storage[start - 1] != UInt8(ascii: "\n") else {
            // Nothing of the current line was written yet: drop it all.
            storage.removeAll()
            start = 0
            return
        }
        if let newline = storage[start...].firstIndex(of: UInt8(ascii: "\n")) {
            storage.removeSubrange((newline + 1)...)
        }
    }
}
