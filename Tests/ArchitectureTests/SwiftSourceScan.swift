// A small reader of Swift source for the tree's size checks: it separates comments from code
// (string literals blanked, interpolations and raw strings included) and counts each type's
// stored instance properties. Not a parser: it relies on the tree's formatting (swift-format,
// one declaration per line), and its tests show what it counts and what it leaves out.

/// One comment of a Swift file: its first line (1-based) and its text, markers included.
struct SourceComment: Equatable {
    var line: Int
    var text: String
}

/// A struct, class, actor or enum declared in a file, with its stored instance properties.
struct DeclaredType: Equatable {
    /// The name with its enclosing types' (`ControlServer.Connection`).
    var name: String
    var kind: String
    var line: Int
    var storedProperties: [String]
}

enum SwiftSourceScan {
    // MARK: Comments and code

    /// `text` with every comment and string literal replaced by spaces (newlines kept, so lines
    /// still count), and the comments.
    static func split(_ text: String) -> (code: [UInt8], comments: [SourceComment]) {
        var reader = Reader(bytes: Array(text.utf8))
        reader.scanCode(untilCloseParen: false)
        return (reader.code, reader.comments)
    }

    private struct Reader {
        let bytes: [UInt8]
        var code: [UInt8]
        var comments: [SourceComment] = []
        var index = 0
        var line = 1

        init(bytes: [UInt8]) {
            self.bytes = bytes
            code = bytes
        }

        func at(_ offset: Int) -> UInt8? {
            index + offset < bytes.count ? bytes[index + offset] : nil
        }

        /// Blanks the byte at `index` (keeping newlines) and moves past it.
        mutating func blank() {
            if bytes[index] == 0x0A {
                line += 1
            } else {
                code[index] = 0x20
            }
            index += 1
        }

        mutating func keep() {
            if bytes[index] == 0x0A { line += 1 }
            index += 1
        }

        /// Code up to the end, or (inside an interpolation) up to its closing parenthesis.
        mutating func scanCode(untilCloseParen: Bool) {
            var depth = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "/"), at(1) == UInt8(ascii: "/") {
                    scanLineComment()
                } else if byte == UInt8(ascii: "/"), at(1) == UInt8(ascii: "*") {
                    scanBlockComment()
                } else if byte == UInt8(ascii: "\"") || (byte == UInt8(ascii: "#") && startsRawString()) {
                    scanString()
                } else if untilCloseParen && byte == UInt8(ascii: "(") {
                    depth += 1
                    keep()
                } else if untilCloseParen && byte == UInt8(ascii: ")") {
                    if depth == 0 { return }
                    depth -= 1
                    keep()
                } else {
                    keep()
                }
            }
        }

        mutating func scanLineComment() {
            let start = index
            let firstLine = line
            while index < bytes.count, bytes[index] != 0x0A { blank() }
            comments.append(SourceComment(line: firstLine, text: String(decoding: bytes[start..<index], as: UTF8.self)))
        }

        mutating func scanBlockComment() {
            let start = index
            let firstLine = line
            var depth = 0
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "/"), at(1) == UInt8(ascii: "*") {
                    depth += 1
                    blank()
                    blank()
                } else if bytes[index] == UInt8(ascii: "*"), at(1) == UInt8(ascii: "/") {
                    depth -= 1
                    blank()
                    blank()
                    if depth == 0 { break }
                } else {
                    blank()
                }
            }
            comments.append(SourceComment(line: firstLine, text: String(decoding: bytes[start..<index], as: UTF8.self)))
        }

        /// `#`s followed by a quote.
        func startsRawString() -> Bool {
            var offset = 0
            while at(offset) == UInt8(ascii: "#") { offset += 1 }
            return at(offset) == UInt8(ascii: "\"")
        }

        /// A string literal (`"…"`, `"""…"""`, `#"…"#`), blanked, its interpolations scanned as
        /// code and blanked too.
        mutating func scanString() {
            var hashes = 0
            while bytes[index] == UInt8(ascii: "#") {
                hashes += 1
                blank()
            }
            let multiline = at(1) == UInt8(ascii: "\"") && at(2) == UInt8(ascii: "\"")
            for _ in 0..<(multiline ? 3 : 1) { blank() }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") && hashesFollow(hashes, from: 1) {
                    for _ in 0...hashes { blank() }
                    if index < bytes.count, bytes[index] == UInt8(ascii: "(") {
                        blank()
                        let start = index
                        scanCode(untilCloseParen: true)
                        for position in start..<index where code[position] != 0x0A { code[position] = 0x20 }
                        if index < bytes.count { blank() }
                    } else if index < bytes.count {
                        blank()
                    }
                } else if byte == UInt8(ascii: "\"") && closes(multiline: multiline, hashes: hashes) {
                    for _ in 0..<((multiline ? 3 : 1) + hashes) { blank() }
                    return
                } else if byte == 0x0A && !multiline {
                    return  // An unterminated literal: the compiler's business, not this scan's.
                } else {
                    blank()
                }
            }
        }

        func hashesFollow(_ count: Int, from offset: Int) -> Bool {
            (0..<count).allSatisfy { at(offset + $0) == UInt8(ascii: "#") }
        }

        func closes(multiline: Bool, hashes: Int) -> Bool {
            let quotes = multiline ? 3 : 1
            return (0..<quotes).allSatisfy { at($0) == UInt8(ascii: "\"") } && hashesFollow(hashes, from: quotes)
        }
    }

    // MARK: Tokens

    struct Token {
        var text: String
        var line: Int
        /// The token follows a line break (or starts the file).
        var startsLine: Bool
        /// Whitespace comes right before it.
        var spaced: Bool
    }

    static func tokens(_ code: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        var line = 1
        var startsLine = true
        var spaced = true
        func isWord(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte >= 0x80
        }
        while index < code.count {
            let byte = code[index]
            if byte == 0x0A {
                line += 1
                startsLine = true
                spaced = true
                index += 1
                continue
            }
            if byte == 0x20 || byte == 0x09 || byte == 0x0D {
                spaced = true
                index += 1
                continue
            }
            var end = index + 1
            if isWord(byte) || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "$") {
                while end < code.count, isWord(code[end]) { end += 1 }
            } else if byte == UInt8(ascii: "-"), end < code.count, code[end] == UInt8(ascii: ">") {
                end += 1
            } else if byte == UInt8(ascii: "`") {
                while end < code.count, code[end] != UInt8(ascii: "`"), code[end] != 0x0A { end += 1 }
                end = min(end + 1, code.count)
            }
            tokens.append(
                Token(
                    text: String(decoding: code[index..<end], as: UTF8.self), line: line, startsLine: startsLine,
                    spaced: spaced))
            startsLine = false
            spaced = false
            index = end
        }
        return tokens
    }

    // MARK: Types and their stored properties

    static let typeKeywords: Set<String> = ["struct", "class", "actor", "enum", "protocol", "extension"]
    /// Words that cannot name a type after `class`: there `class` is a modifier (`class func`).
    static let declarationWords: Set<String> = [
        "var", "let", "func", "subscript", "init", "deinit", "static", "final", "override", "public", "private",
        "fileprivate", "internal", "package", "open", "nonisolated", "convenience", "required", "typealias",
    ]
    /// Words that begin a declaration: a declaration that reaches a line starting with one has ended.
    static let declarationStarts: Set<String> = declarationWords.union(typeKeywords).union([
        "case", "mutating", "nonmutating", "lazy", "weak", "unowned", "dynamic", "indirect", "associatedtype",
        "import", "}", "#if", "#else", "#elseif", "#endif", ";", "consuming", "borrowing", "distributed",
    ])

    /// Every struct, class, actor and enum in `text`, with the stored instance properties its
    /// body declares: `let` and `var` at the type's own scope, not `static` or `class`, and not
    /// computed (a `var` with a body other than `willSet`/`didSet` observers and no initial
    /// value). Protocol requirements and extensions hold none.
    static func types(in text: String) -> [DeclaredType] {
        let tokens = tokens(split(text).code)
        var found: [DeclaredType] = []
        // The open braces: for a type's body, the index of its entry in `found` (nil for a
        // protocol's or an extension's), with the name it gives nested types.
        enum Scope {
            case type(entry: Int?, name: String)
            case other
        }
        var scopes: [Scope] = []
        var pending: (kind: String, name: String, line: Int)?
        var index = 0
        func enclosingName() -> String? {
            for scope in scopes.reversed() {
                if case .type(_, let name) = scope { return name }
            }
            return nil
        }
        while index < tokens.count {
            let token = tokens[index]
            let afterDot = index > 0 && tokens[index - 1].text == "." && !token.spaced
            switch token.text {
            case "{":
                if let type = pending {
                    let qualified = enclosingName().map { $0 + "." + type.name } ?? type.name
                    var entry: Int?
                    if type.kind != "protocol" && type.kind != "extension" {
                        found.append(
                            DeclaredType(name: qualified, kind: type.kind, line: type.line, storedProperties: []))
                        entry = found.count - 1
                    }
                    scopes.append(.type(entry: entry, name: type.kind == "extension" ? type.name : qualified))
                    pending = nil
                } else {
                    scopes.append(.other)
                }
                index += 1
            case "}":
                if !scopes.isEmpty { scopes.removeLast() }
                index += 1
            case let word where typeKeywords.contains(word) && !afterDot && beginsDeclaration(tokens, index):
                let next = index + 1 < tokens.count ? tokens[index + 1].text : ""
                if word == "class" && (declarationWords.contains(next) || next == "var" || next == "let") {
                    index += 1  // `class var`, `class func`: a modifier.
                } else if word == "protocol" && next == "<" {
                    index += 1
                } else {
                    // An extension's name may be dotted (`extension A.B`).
                    var name = next
                    var cursor = index + 2
                    while word == "extension", cursor + 1 < tokens.count, tokens[cursor].text == "." {
                        name += "." + tokens[cursor + 1].text
                        cursor += 2
                    }
                    pending = (word, name, token.line)
                    index += 1
                }
            case "let", "var":
                guard !afterDot, case .type(let entry?, _) = scopes.last, !isStatic(tokens, before: index) else {
                    index += 1
                    continue
                }
                let (names, end) = storedBindings(tokens, declarationAt: index)
                found[entry].storedProperties += names
                index = end
            default:
                index += 1
            }
        }
        return found
    }

    static let modifiers: Set<String> = [
        "public", "private", "fileprivate", "internal", "package", "open", "final", "indirect", "nonisolated",
    ]

    /// Whether the token at `index` is the first of a declaration on its line but for
    /// modifiers and attributes (`public final class`, `@MainActor struct`, `private(set)`).
    static func beginsDeclaration(_ tokens: [Token], _ index: Int) -> Bool {
        var cursor = index - 1
        while cursor >= 0, !tokens[cursor + 1].startsLine {
            let word = tokens[cursor].text
            if word == "{" || word == ";" { return true }
            if word == ")" {  // an attribute's or a modifier's arguments
                var depth = 0
                while cursor >= 0 {
                    if tokens[cursor].text == ")" { depth += 1 }
                    if tokens[cursor].text == "(" { depth -= 1 }
                    if depth == 0 { break }
                    cursor -= 1
                }
            } else if !modifiers.contains(word) && !word.hasPrefix("@") {
                return false
            }
            cursor -= 1
        }
        return true
    }

    /// `static` or `class` before the `let`/`var` at `index`, on its line.
    static func isStatic(_ tokens: [Token], before index: Int) -> Bool {
        var cursor = index - 1
        while cursor >= 0, !tokens[cursor + 1].startsLine {
            if tokens[cursor].text == "static" || tokens[cursor].text == "class" { return true }
            cursor -= 1
        }
        return false
    }

    /// The stored names the declaration at `start` (`let`/`var`) binds, and the index past it.
    /// A binding is stored when it has an initial value, no body, or a body of observers.
    static func storedBindings(_ tokens: [Token], declarationAt start: Int) -> (names: [String], end: Int) {
        var names: [String] = []
        var depth = 0  // (), [] and {} inside the declaration
        var angles = 0  // generic arguments
        var binding: (name: String, hasValue: Bool, accessors: String?)?
        func finish() {
            guard let current = binding else { return }
            let observed = current.accessors == "willSet" || current.accessors == "didSet"
            if current.hasValue || current.accessors == nil || observed { names.append(current.name) }
            binding = nil
        }
        func text(_ index: Int) -> String { index >= 0 && index < tokens.count ? tokens[index].text : "" }
        func isWord(_ text: String) -> Bool { text.first.map { $0.isLetter || $0 == "_" } ?? false }
        binding = (text(start + 1), false, nil)
        var index = start + 2
        scan: while index < tokens.count {
            let token = tokens[index]
            if depth == 0 && token.startsLine && (declarationStarts.contains(token.text) || token.text.hasPrefix("@")) {
                break scan
            }
            switch token.text {
            case "(", "[": depth += 1
            case ")", "]": depth -= 1
            case "<" where !token.spaced && isWord(text(index - 1)): angles += 1  // `Set<Int>`, not `0..<n`
            case ">" where !token.spaced && angles > 0: angles -= 1
            case "{":
                if depth == 0, binding?.accessors == nil { binding?.accessors = text(index + 1) }
                depth += 1
            case "}":
                if depth == 0 { break scan }  // the end of the type's body
                depth -= 1
                if depth == 0 && binding?.accessors != nil {
                    index += 1
                    break scan
                }
            case "=" where depth == 0 && token.spaced:
                binding?.hasValue = true
            case "," where depth == 0 && angles == 0:
                finish()
                binding = (text(index + 1), false, nil)
                index += 1
            default: break
            }
            if depth < 0 { break scan }
            index += 1
        }
        finish()
        return (names, index)
    }
}
