// The INI layer: libinih reads the text; this file hands it lines and collects sections.
// It is the only file that touches CInih. It knows nothing of recd's keys (ConfigInterpreter).
//
// What libinih (Debian's build: no INI_HANDLER_LINENO, 200-byte lines, multi-line values on,
// `;` inline comments) cannot tell us, the reader callback below works out line by line:
// - line numbers: the handler runs right after the reader returned the line it belongs to;
// - section headers: the handler is not called for a section without keys, and libinih cuts
//   section names to 49 bytes (too short for `[session APP]` with a 64-character APP);
// - lines libinih would silently mangle (too long, NUL bytes, invalid UTF-8): they are
//   reported and handed over as blank lines;
// - continuation lines (an indented line after a key): libinih calls the handler again with
//   the previous key's name (and, unlike a key line, with its inline `;` comment); they are
//   kept apart, with their own line numbers and comments stripped, in the entry's
//   `continuations`. Whether a key may continue is the interpreter's business (lists only).

internal import CInih

/// One `key = value` line as libinih split it (key and value trimmed, `;` comment removed).
struct ConfigEntry: Equatable {
    var key: String
    var value: String
    var line: Int
    /// The indented lines that continue the value, in order (text trimmed).
    var continuations: [ConfigContinuation] = []
}

/// One indented line continuing the value of the key above it.
struct ConfigContinuation: Equatable {
    var value: String
    var line: Int
}

/// One `[header]` and the entries under it, before any meaning is given to them.
struct ConfigRawSection: Equatable {
    /// The text between `[` and `]`, as written.
    var header: String
    var line: Int
    var entries: [ConfigEntry]
}

/// A problem found while reading; ConfigLoader adds the file name.
struct ConfigIssue: Equatable {
    var line: Int
    var message: String
    /// A missing key, reported at its section's header. It yields to any other issue, so a
    /// misspelt key is reported as the unknown key it is rather than as the key it lacks.
    var isMissingKey = false
}

/// Collects issues; the earliest one (by line) is the one reported.
struct ConfigIssues {
    private(set) var all: [ConfigIssue] = []

    mutating func add(line: Int, _ message: String, isMissingKey: Bool = false) {
        all.append(ConfigIssue(line: line, message: message, isMissingKey: isMissingKey))
    }

    var isEmpty: Bool { all.isEmpty }

    /// The issue to report: the first in file order, missing keys last; for one line, the
    /// first one found.
    var first: ConfigIssue? {
        all.enumerated().min { a, b in
            (a.element.isMissingKey ? 1 : 0, a.element.line, a.offset)
                < (b.element.isMissingKey ? 1 : 0, b.element.line, b.offset)
        }?.element
    }
}

/// Splits INI text into raw sections with libinih.
enum ConfigINI {
    /// Reads `bytes` (the whole file) into sections. Never fails: problems become issues.
    static func scan(_ bytes: [UInt8]) -> (sections: [ConfigRawSection], issues: ConfigIssues) {
        let scanner = ConfigLineFeeder(bytes)
        let result = withExtendedLifetime(scanner) {
            let context = Unmanaged.passUnretained(scanner).toOpaque()
            return ini_parse_stream(feedLine, context, takeEntry, context)
        }
        if result > 0 {
            // libinih's syntax error (a line with neither `=`/`:` nor a `[section]`); the
            // feeder may already have explained that line better.
            let line = Int(result)
            if !scanner.issues.all.contains(where: { $0.line == line }) {
                scanner.issues.add(
                    line: line,
                    "expected \"key = value\" or \"[section]\", found \(scanner.text(ofLine: line).quotedForMessage)"
                )
            }
        } else if result < 0 {
            // -1 (open) cannot happen with a reader; -2 is libinih running out of memory.
            scanner.issues.add(line: 0, "libinih could not parse the text (error \(result))")
        }
        return (scanner.sections, scanner.issues)
    }
}

/// libinih's reader callback (fgets-like): copies the next line into `buffer`, or returns nil
/// at the end. `stream` is the ConfigLineFeeder, borrowed for the call.
private func feedLine(
    _ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int32, _ stream: UnsafeMutableRawPointer?
) -> UnsafeMutablePointer<CChar>? {
    guard let buffer, let stream else { return nil }
    let feeder = Unmanaged<ConfigLineFeeder>.fromOpaque(stream).takeUnretainedValue()
    return feeder.feed(into: buffer, capacity: Int(capacity)) ? buffer : nil
}

/// libinih's handler callback: one `name = value` pair of the line just fed. `user` is the
/// ConfigLineFeeder. The section argument is ignored (see the file comment). Always returns
/// nonzero (success): issues are collected by the feeder, not counted by libinih.
private func takeEntry(
    _ user: UnsafeMutableRawPointer?, _ section: UnsafePointer<CChar>?,
    _ name: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?
) -> Int32 {
    guard let user, let name, let value else { return 1 }
    let feeder = Unmanaged<ConfigLineFeeder>.fromOpaque(user).takeUnretainedValue()
    feeder.take(key: String(cString: name), value: String(cString: value))
    return 1
}

/// The state of one scan, passed to libinih's callbacks through their `void*` arguments.
/// Lives for one call of `ConfigINI.scan`, on one thread.
private final class ConfigLineFeeder {
    private let lines: [ArraySlice<UInt8>]
    private var nextIndex = 0
    /// 1-based number of the line most recently fed to libinih.
    private(set) var lineNumber = 0
    /// Mirrors libinih's `prev_name`: set by a key line, cleared by a section header. While set,
    /// libinih reads an indented line as a continuation of the previous value.
    private var previousKey: String?
    /// Whether the line just fed is an indented continuation of `previousKey`'s value.
    private var feedingContinuation = false
    private(set) var sections: [ConfigRawSection] = []
    var issues = ConfigIssues()

    init(_ bytes: [UInt8]) {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }  // the final newline ends a line
        self.lines = lines
    }

    /// The text of a line for quoting in a message (invalid UTF-8 repaired).
    func text(ofLine line: Int) -> String {
        guard line >= 1, line <= lines.count else { return "" }
        return String(decoding: Self.withoutCarriageReturn(lines[line - 1]), as: UTF8.self)
    }

    /// Copies the next line, newline and NUL terminated, into libinih's buffer. A line libinih
    /// would misread is reported and replaced by a blank line, so line numbers stay right.
    func feed(into buffer: UnsafeMutablePointer<CChar>, capacity: Int) -> Bool {
        guard nextIndex < lines.count, capacity >= 2 else { return false }
        let line = Self.withoutCarriageReturn(lines[nextIndex])
        nextIndex += 1
        lineNumber += 1
        let passed = check(line, capacity: capacity) ? line : []
        passed.withUnsafeBytes { raw in
            if let source = raw.baseAddress {
                UnsafeMutableRawPointer(buffer).copyMemory(from: source, byteCount: raw.count)
            }
        }
        buffer[passed.count] = CChar(bitPattern: UInt8(ascii: "\n"))
        buffer[passed.count + 1] = 0
        return true
    }

    /// libinih's handler call for the line just fed.
    func take(key: String, value: String) {
        if feedingContinuation {
            // libinih passes prev_name as the key. A key outside any section was reported
            // already, and so has no entry to continue.
            if let last = sections.indices.last, !sections[last].entries.isEmpty {
                let entry = sections[last].entries.count - 1
                sections[last].entries[entry].continuations.append(
                    ConfigContinuation(value: Self.withoutInlineComment(value), line: lineNumber))
            }
            return
        }
        // An empty name leaves libinih's prev_name empty, so mirror that too.
        previousKey = key.isEmpty ? nil : key
        guard !sections.isEmpty else {
            issues.add(
                line: lineNumber,
                "\(key.quotedForMessage) is outside any section; put it under [daemon], [jack], [archive], [policy], [port NAME] or [session APP]"
            )
            return
        }
        sections[sections.count - 1].entries.append(
            ConfigEntry(key: key, value: value, line: lineNumber))
    }

    /// Whether libinih may see `line` as it is; records why not, and notes section headers.
    private func check(_ line: ArraySlice<UInt8>, capacity: Int) -> Bool {
        feedingContinuation = false
        if line.contains(0) {
            issues.add(line: lineNumber, "line contains a NUL byte; is this a text file?")
            return false
        }
        if line.count + 2 > capacity {
            // libinih would cut the line into pieces and read each piece as a line.
            issues.add(
                line: lineNumber,
                "line is \(line.count) bytes long; libinih reads at most \(capacity - 2) bytes per line"
            )
            return false
        }
        if String(validating: line, as: UTF8.self) == nil {
            issues.add(line: lineNumber, "line is not valid UTF-8")
            return false
        }

        // The same steps as libinih's ini_parse_stream, in the same order.
        var content = line
        if lineNumber == 1, content.starts(with: [0xEF, 0xBB, 0xBF]) { content.removeFirst(3) }
        let trimmed = Self.trimmingSpace(content)
        guard let first = trimmed.first, first != UInt8(ascii: ";"), first != UInt8(ascii: "#")
        else { return true }  // blank line or comment
        if previousKey != nil, trimmed.startIndex > content.startIndex {
            feedingContinuation = true  // libinih hands it to the handler as prev_name's
            return true
        }
        // Not a header: a key line, or a line libinih reports as a syntax error.
        guard first == UInt8(ascii: "[") else { return true }
        guard let close = Self.sectionEnd(trimmed) else {
            issues.add(
                line: lineNumber,
                "section header \(String(decoding: trimmed, as: UTF8.self).quotedForMessage) has no closing \"]\""
            )
            return false
        }
        let header = String(
            decoding: trimmed[trimmed.index(after: trimmed.startIndex)..<close], as: UTF8.self)
        sections.append(ConfigRawSection(header: header, line: lineNumber, entries: []))
        previousKey = nil
        return true
    }

    /// libinih's find_chars_or_comment(start + 1, "]"): the first `]`, unless an inline `;`
    /// comment (a `;` after whitespace) comes first.
    private static func sectionEnd(_ trimmed: ArraySlice<UInt8>) -> ArraySlice<UInt8>.Index? {
        var wasSpace = false
        for index in trimmed.indices.dropFirst() {
            let byte = trimmed[index]
            if byte == UInt8(ascii: "]") { return index }
            if wasSpace && byte == UInt8(ascii: ";") { return nil }
            wasSpace = isCSpace(byte)
        }
        return nil
    }

    /// Debian's libinih 55 strips an inline `;` comment from a key line but hands a
    /// continuation line over whole; strip it the same way (a `;` after whitespace), so both
    /// kinds of line read alike.
    private static func withoutInlineComment(_ value: String) -> String {
        let bytes = Array(value.utf8)
        var wasSpace = false
        for (index, byte) in bytes.enumerated() {
            if wasSpace && byte == UInt8(ascii: ";") {
                return String(decoding: trimmingSpace(bytes[..<index]), as: UTF8.self)
            }
            wasSpace = isCSpace(byte)
        }
        return value
    }

    private static func withoutCarriageReturn(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        line.last == UInt8(ascii: "\r") ? line.dropLast() : line
    }

    /// C's isspace in the C locale, which is what libinih's lskip/rstrip use.
    private static func isCSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    private static func trimmingSpace(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let start = bytes.firstIndex(where: { !isCSpace($0) }),
            let end = bytes.lastIndex(where: { !isCSpace($0) })
        else { return bytes[bytes.endIndex...] }
        return bytes[start...end]
    }
}
