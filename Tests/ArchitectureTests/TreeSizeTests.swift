// The whole tree stays small enough to read: no source file over 600 lines, no type with more
// than 20 stored properties, in every module; and no comment names the issue that asked for
// the code (a comment says what the code does and why, not which ticket wanted it).
import Foundation
import TestSupport
import Testing

enum SourceTree {
    static let maxLines = 600
    static let maxStoredProperties = 20

    /// Files that are generated tables, with why they may be long. None in the tree today; a
    /// generated file is named here, not hidden by a pattern.
    static let generatedTables: [String: String] = [:]

    /// What a file is excepted from while another branch reshapes it.
    enum Check: Hashable, CustomStringConvertible {
        case lines
        case storedProperties(type: String)
        case issueNumbers

        var description: String {
            switch self {
            case .lines: "the line limit"
            case .storedProperties(let type): "the stored-property limit (\(type))"
            case .issueNumbers: "the issue-number check"
            }
        }
    }

    struct Exception: Hashable {
        var path: String
        var check: Check
    }

    /// Being split: files other branches reshape now (the segment stages in Archive, the
    /// engine in AudioEngine and EngineController, the recorder service's features in Daemon).
    /// The lead empties this list as those branches merge; an entry that no longer fails its
    /// check fails the test, so the list cannot outlive its reason.
    static let beingSplit: Set<Exception> = []

    /// Paths under the package root of every file below `directory` (`Sources`, `Tests`).
    static func files(under directory: String, suffix: String? = nil) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: ModuleMap.root + "/" + directory)
        var paths: [String] = []
        while let file = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = directory + "/" + file
            guard FileManager.default.fileExists(atPath: ModuleMap.root + "/" + path, isDirectory: &isDirectory),
                !isDirectory.boolValue, suffix.map({ file.hasSuffix($0) }) ?? true
            else { continue }
            paths.append(path)
        }
        return paths.sorted()
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOfFile: ModuleMap.root + "/" + path, encoding: .utf8)
    }

    /// Lines as `wc -l` counts them (a last line without a newline counts too).
    static func lineCount(_ text: String) -> Int {
        let newlines = text.utf8.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        return newlines + (text.isEmpty || text.hasSuffix("\n") ? 0 : 1)
    }

    /// A mention of an issue or pull request by its number: the word (issue, ticket, PR, pull
    /// request, singular or plural) followed by digits, or a hash followed by digits.
    static let issueNumber = try! NSRegularExpression(
        pattern: #"\b(?:issues?|tickets?|PRs?|pull requests?)\s*#?\s*\d+|(?:^|[\s(\[,])#\d+\b"#,
        options: [.caseInsensitive])

    static func mentionsIssueNumber(_ comment: String) -> Bool {
        issueNumber.firstMatch(in: comment, range: NSRange(comment.startIndex..., in: comment)) != nil
    }

    /// The findings of the three checks on the tree, each with the exception that would cover
    /// it (nil: none may).
    static func findings() throws -> [(finding: String, exception: Exception?)] {
        var found: [(String, Exception?)] = []
        for path in files(under: "Sources") where generatedTables[path] == nil {
            let lines = lineCount(try text(path))
            if lines > maxLines {
                found.append(("\(path) has \(lines) lines", Exception(path: path, check: .lines)))
            }
        }
        for path in files(under: "Sources", suffix: ".swift") {
            for type in SwiftSourceScan.types(in: try text(path))
            where type.storedProperties.count > maxStoredProperties {
                let name = type.name.split(separator: ".").last.map(String.init) ?? type.name
                found.append(
                    (
                        "\(path):\(type.line) \(type.kind) \(type.name) has \(type.storedProperties.count) stored "
                            + "properties: \(type.storedProperties.joined(separator: ", "))",
                        Exception(path: path, check: .storedProperties(type: name))
                    ))
            }
        }
        for path in files(under: "Sources", suffix: ".swift") + files(under: "Tests", suffix: ".swift") {
            for comment in SwiftSourceScan.split(try text(path)).comments where mentionsIssueNumber(comment.text) {
                found.append(
                    (
                        "\(path):\(comment.line) names an issue: \(comment.text)",
                        Exception(path: path, check: .issueNumbers)
                    ))
            }
        }
        return found
    }
}

@Suite("the tree's size: small files, small types, comments without issue numbers")
struct TreeSizeTests {
    @Test("no file in Sources over 600 lines, no type over 20 stored properties, no issue number in a comment")
    func wholeTree() throws {
        let findings = try SourceTree.findings()
        let unexcused = findings.filter { $0.exception.map { !SourceTree.beingSplit.contains($0) } ?? true }
        if !unexcused.isEmpty {
            let listing = unexcused.map(\.finding).joined(separator: "\n")
            Issue.record(Comment(rawValue: "\(unexcused.count) findings:\n\(listing)"))
        }
        let used = Set(findings.compactMap(\.exception))
        for stale in SourceTree.beingSplit.subtracting(used).sorted(by: { "\($0)" < "\($1)" }) {
            Issue.record("\(stale.path) passes \(stale.check) now: remove it from SourceTree.beingSplit")
        }
        #expect(SourceTree.files(under: "Sources", suffix: ".swift").count > 200, "the scan found too few files")
    }

    @Test("the stored-property counter counts instance lets and vars at type scope, and nothing else")
    func storedPropertyCounter() {
        let source = #"""
            public final class Outer: Base {
                public let a: Int
                private(set) var b = 0, c: [String: Int] = [:]
                var d: Int { a + b }
                var e: Int {
                    get { a }
                    set { b = newValue }
                }
                var f: Result<Int, Error>? { didSet { print("changed") } }
                lazy var g = { () -> Int in
                    let local = 1
                    return local
                }()
                static let h = 1
                nonisolated(unsafe) static var i = 2
                class var j: Int { 3 }
                let k: (Int) -> Void
                var firstTen: ArraySlice<Int> { [1, 2][0..<10] }
                @Atomic var l: Int
                let text = "struct Fake { let x: Int }"  // a string, and a comment: struct Fake2 { let y }
                func method() {
                    let m = 1
                    var n = 2
                    struct Local { let o: Int }
                    _ = (m, n)
                }
                init() { let p = 0; _ = p }
                enum Kind { case one, two; var isOne: Bool { self == .one } }
                struct Inner {
                    var q: Int
                    var r: String { "\(q)" }
                }
            }
            extension Outer {
                var s: Int { 1 }
                static var t = 0
            }
            protocol Shape { var area: Double { get } }
            """#
        let types = SwiftSourceScan.types(in: source)
        #expect(types.map(\.name) == ["Outer", "Outer.Local", "Outer.Kind", "Outer.Inner"])
        #expect(types.first?.storedProperties == ["a", "b", "c", "f", "g", "k", "l", "text"])
        #expect(types.dropFirst().map(\.storedProperties) == [["o"], [], ["q"]])
    }

    @Test("the checks have teeth: a long file, a type of 21 properties and an issue number are seen")
    func checksBite() {
        let wide = "struct Wide {\n" + (1...21).map { "    var p\($0): Int\n" }.joined() + "}\n"
        #expect(SwiftSourceScan.types(in: wide).first?.storedProperties.count == 21)
        #expect(SourceTree.lineCount(String(repeating: "x\n", count: 601)) == 601)
        #expect(SourceTree.lineCount("a\nb") == 2)
        for comment in ["// the fix (issue 41)", "/// see #38", "// as issue 12 item 3 asks", "// Issues 13, 14"] {
            #expect(SourceTree.mentionsIssueNumber(comment), "\(comment) is not seen")
        }
        for comment in ["// SPEC §3", "// client#7 in a log line", "// channel 1 of 2", "// the #if branch"] {
            #expect(!SourceTree.mentionsIssueNumber(comment), "\(comment) is seen")
        }
        let (_, comments) = SwiftSourceScan.split("let a = \"// issue 9\" // real\n/* block\n issue 3 */ let b = 1\n")
        #expect(
            comments == [
                SourceComment(line: 1, text: "// real"), SourceComment(line: 2, text: "/* block\n issue 3 */"),
            ])
    }
}
