// Reading one value of one key: words from a fixed vocabulary, yes/no, numbers in a range,
// absolute paths, comma-separated lists, names. Each reader either returns the value or
// records an issue that names the section, the key, the bad value and what is accepted.

/// One key of one section, with what is needed to complain about it.
struct ConfigField {
    /// The section as the user would write it, e.g. `[port mic]`.
    let section: String
    let entry: ConfigEntry

    var key: String { entry.key }
    var value: String { entry.value }
    var line: Int { entry.line }

    /// Records `[section] key: "item" problem`. `item` defaults to the whole value; `line`
    /// (for an item on a continuation line) to the key's line.
    func complain(
        _ problem: String, about item: String? = nil, line: Int? = nil,
        in issues: inout ConfigIssues
    ) {
        var message = "\(section) \(key): \((item ?? value).quotedForMessage) \(problem)"
        let text = line.flatMap { line in entry.continuations.first { $0.line == line }?.value }
        if (text ?? value).contains(" #") {
            message += " (a \"#\" comment must be on a line of its own)"
        }
        issues.add(line: line ?? self.line, message)
    }

    /// Records `[section] key: problem`, for problems that are not about the value's text.
    func complainAboutKey(_ problem: String, in issues: inout ConfigIssues) {
        issues.add(line: line, "\(section) \(key): \(problem)")
    }

    /// A word of `T`'s vocabulary (its raw values), e.g. a category.
    func word<T: CaseIterable & RawRepresentable>(
        _ type: T.Type, noun: String, in issues: inout ConfigIssues
    ) -> T? where T.RawValue == String {
        if let word = T(rawValue: value) { return word }
        complain(
            "is not \(noun); use one of \(T.allCases.map(\.rawValue).joined(separator: ", "))",
            in: &issues)
        return nil
    }

    /// `yes` or `no`, nothing else.
    func yesNo(in issues: inout ConfigIssues) -> Bool? {
        switch value {
        case "yes": return true
        case "no": return false
        default:
            complain("is not a boolean; use yes or no", in: &issues)
            return nil
        }
    }

    /// A whole number in `range`.
    func integer(in range: ClosedRange<Int>, in issues: inout ConfigIssues) -> Int? {
        guard let number = Int(value) else {
            complain(
                "is not a whole number; use \(range.lowerBound)...\(range.upperBound)", in: &issues)
            return nil
        }
        guard range.contains(number) else {
            complain("is out of range; use \(range.lowerBound)...\(range.upperBound)", in: &issues)
            return nil
        }
        return number
    }

    /// A decimal number in `range` (never NaN or infinite).
    func number(in range: ClosedRange<Double>, in issues: inout ConfigIssues) -> Double? {
        let bounds =
            "\(range.lowerBound.formattedForMessage)...\(range.upperBound.formattedForMessage)"
        guard let number = Double(value), number.isFinite else {
            complain("is not a number; use \(bounds)", in: &issues)
            return nil
        }
        guard range.contains(number) else {
            complain("is out of range; use \(bounds)", in: &issues)
            return nil
        }
        return number
    }

    /// An absolute path (relative paths would depend on the daemon's working directory).
    func absolutePath(maxBytes: Int? = nil, in issues: inout ConfigIssues) -> String? {
        guard value.hasPrefix("/") else {
            complain("is not an absolute path; start it with /", in: &issues)
            return nil
        }
        if let maxBytes, value.utf8.count > maxBytes {
            complain(
                "is \(value.utf8.count) bytes long; use a path of at most \(maxBytes) bytes",
                in: &issues)
            return nil
        }
        return value
    }

    /// Free text that must not be empty, e.g. a microphone usage description.
    func text(describing what: String, in issues: inout ConfigIssues) -> String? {
        if value.isEmpty {
            complain("is empty; give \(what)", in: &issues)
            return nil
        }
        return value
    }

    /// A word of 1...`maxLength` characters drawn from `allowed` (described as `allowedText`).
    func token(
        _ noun: String, maxLength: Int, allowed: (Character) -> Bool, allowedText: String,
        in issues: inout ConfigIssues
    ) -> String? {
        if ConfigName.isToken(value, maxLength: maxLength, allowed: allowed) { return value }
        complain(
            "is not \(noun); use 1 to \(maxLength) characters from \(allowedText)", in: &issues)
        return nil
    }

    /// A comma-separated list, items trimmed. An empty value is an empty list; an empty item
    /// (`a,,b` or a trailing comma) and a repeated item are errors.
    func list(in issues: inout ConfigIssues) -> [String]? {
        listItems(in: &issues)?.map(\.text)
    }

    /// The list with each item's line. The value may continue on indented lines: each line
    /// adds items, with a comma between lines whether or not a line ends with one (and
    /// `key =` may leave its own line empty). Ranges such as `capture_{1..32}` are expanded
    /// (ConfigRange).
    func listItems(in issues: inout ConfigIssues) -> [ConfigListItem]? {
        var pieces = [ConfigContinuation(value: value, line: line)] + entry.continuations
        if pieces.count > 1, value.isEmpty { pieces.removeFirst() }
        if pieces.count == 1, value.isEmpty { return [] }
        var items: [ConfigListItem] = []
        var seen = Set<String>()
        for (index, piece) in pieces.enumerated() {
            var text = Substring(piece.value)
            if index < pieces.count - 1, text.hasSuffix(",") { text = text.dropLast() }
            for part in text.split(separator: ",", omittingEmptySubsequences: false) {
                let item = String(part).trimmedWhitespace
                if item.isEmpty {
                    complain(
                        "has an empty item; separate items with single commas",
                        about: piece.value, line: piece.line, in: &issues)
                    return nil
                }
                let expanded: [String]
                switch ConfigRange.expand(item) {
                case .success(let names): expanded = names
                case .failure(let problem):
                    complain(problem.message, about: item, line: piece.line, in: &issues)
                    return nil
                }
                // Counted before the items are kept: 8,000 continued lines of {1..1024} once
                // built eight million names (25 s, 574 MB) before any check of the port looked.
                if items.count + expanded.count > ConfigRange.maxItems {
                    complain(
                        "makes the list longer than \(ConfigRange.maxItems) items; a list holds at most "
                            + "\(ConfigRange.maxItems) (a port at most 64 channels)",
                        about: item, line: piece.line, in: &issues)
                    return nil
                }
                for name in expanded {
                    guard seen.insert(name).inserted else {
                        complain("is listed twice", about: name, line: piece.line, in: &issues)
                        return nil
                    }
                    items.append(ConfigListItem(text: name, line: piece.line))
                }
            }
        }
        return items
    }

    /// A list of words of `T`'s vocabulary, each parsed by `parse` (which may accept aliases).
    func words<T: Hashable & CaseIterable & RawRepresentable>(
        _ type: T.Type, noun: String, note: String = "",
        parse: (String) -> T? = { T(rawValue: $0) },
        in issues: inout ConfigIssues
    ) -> [T]? where T.RawValue == String {
        guard let items = listItems(in: &issues) else { return nil }
        var words: [T] = []
        for item in items {
            guard let word = parse(item.text) else {
                let accepted = T.allCases.map(\.rawValue).joined(separator: ", ")
                complain(
                    "is not \(noun); use one of \(accepted)\(note)", about: item.text,
                    line: item.line, in: &issues)
                return nil
            }
            if words.contains(word) {
                complain(
                    "is listed twice (as \(word.rawValue))", about: item.text, line: item.line,
                    in: &issues)
                return nil
            }
            words.append(word)
        }
        return words
    }
}

/// One item of a list value, with the line it is written on.
struct ConfigListItem: Equatable {
    var text: String
    var line: Int
}

/// Ranges in list items: `system:capture_{1..32}` is system:capture_1 ... system:capture_32;
/// `{01..08}` keeps the zero padding (to the wider bound, as in bash), `{4..1}` counts down.
/// Several ranges in one item multiply. Any `{` starts a range.
enum ConfigRange {
    /// The most items one list item expands to, and one list holds in all.
    static let maxItems = 1024

    struct Problem: Error, Equatable {
        var message: String
    }

    static func expand(_ item: String) -> Result<[String], Problem> {
        guard let open = item.firstIndex(of: "{") else { return .success([item]) }
        let prefix = item[..<open]
        guard let close = item[open...].firstIndex(of: "}") else {
            return .failure(
                Problem(message: "has \"{\" without a closing \"}\"; write a range as {1..32}"))
        }
        let range = String(item[open...close])
        let bounds = item[item.index(after: open)..<close]
            .split(separator: "..", omittingEmptySubsequences: false).map(String.init)
        let isNumber = { (text: String) in
            !text.isEmpty && text.count <= 9 && text.allSatisfy { $0.isASCII && $0.isNumber }
        }
        guard bounds.count == 2, isNumber(bounds[0]), isNumber(bounds[1]),
            let first = Int(bounds[0]), let last = Int(bounds[1])
        else {
            return .failure(
                Problem(
                    message:
                        "has a malformed range \(range.quotedForMessage); write {FIRST..LAST} with whole numbers, e.g. {1..32}, {01..08} or {4..1}"
                ))
        }
        let count = abs(last - first) + 1
        guard count <= maxItems else {
            return .failure(
                Problem(
                    message:
                        "has a range \(range.quotedForMessage) of \(count) items; a list item expands to at most \(maxItems)"
                ))
        }
        let padded = bounds.contains { $0.count > 1 && $0.hasPrefix("0") }
        let width = padded ? max(bounds[0].count, bounds[1].count) : 0
        let suffixes: [String]
        switch expand(String(item[item.index(after: close)...])) {
        case .success(let names): suffixes = names
        case .failure(let problem): return .failure(problem)
        }
        guard count * suffixes.count <= maxItems else {
            return .failure(
                Problem(
                    message:
                        "expands to \(count * suffixes.count) items; a list item expands to at most \(maxItems)"
                ))
        }
        let numbers = first <= last ? Array(first...last) : Array((last...first).reversed())
        var names: [String] = []
        for number in numbers {
            let digits = String(number)
            let text = String(repeating: "0", count: max(0, width - digits.count)) + digits
            for suffix in suffixes { names.append(prefix + text + suffix) }
        }
        return .success(names)
    }
}

/// Names recd gives things: app ids and port names.
enum ConfigName {
    static let maxLength = 64
    static let allowedText = "A-Z a-z 0-9 . _ -"

    /// `[A-Za-z0-9._-]`, ASCII only.
    static func isNameCharacter(_ character: Character) -> Bool {
        guard character.isASCII, let ascii = character.asciiValue else { return false }
        switch ascii {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// An app id or port name: 1...64 characters of `[A-Za-z0-9._-]`.
    static func isValid(_ name: String) -> Bool {
        isToken(name, maxLength: maxLength, allowed: isNameCharacter)
    }

    static func isToken(_ text: String, maxLength: Int, allowed: (Character) -> Bool) -> Bool {
        !text.isEmpty && text.count <= maxLength && text.allSatisfy(allowed)
    }
}

extension String {
    /// Whitespace (Unicode's) removed from both ends.
    var trimmedWhitespace: String {
        guard let start = firstIndex(where: { !$0.isWhitespace }),
            let end = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(self[start...end])
    }

    /// The text in double quotes for a message: control characters, quotes and backslashes
    /// escaped, cut after 60 characters, so garbage input gives a readable line.
    var quotedForMessage: String {
        let limit = 60
        var out = "\""
        for scalar in unicodeScalars.prefix(limit) {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case _
            where scalar.properties.generalCategory == .control
                || scalar.properties.generalCategory == .format
                || scalar == "\u{FFFD}":
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += unicodeScalars.count > limit ? "…\"" : "\""
        return out
    }
}

extension Double {
    /// `-96`, `0`, `100` rather than `-96.0`; other values as Swift prints them.
    var formattedForMessage: String {
        self == rounded() && abs(self) < 1e15 ? String(Int(self)) : String(self)
    }
}
