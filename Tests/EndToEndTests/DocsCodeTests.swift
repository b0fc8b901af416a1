// The code in the documents compiles as written: every ```c block of README.md and docs/*.md is
// a whole program, built against the built libaudiosession with the flags its pkg-config file
// gives (`Examples.compileC`: `cc -Wall -Werror`). A snippet that leans on an undeclared name
// fails here, as a reader's copy would.
import Foundation
import Testing
import TestSupport

enum DocumentCode {
    /// The ```LANGUAGE blocks of `text`, in order.
    static func blocks(_ language: String, in text: String) -> [String] {
        var found: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```" + language {
                current = []
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                found.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return found
    }

    /// README.md and every docs/*.md, by path relative to the package root.
    static func documents() throws -> [(path: String, text: String)] {
        let root = ExternalTools.packageRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }
        return try (["README.md"] + docs.sorted().map { "docs/" + $0 }).map {
            ($0, try String(contentsOfFile: root + "/" + $0, encoding: .utf8))
        }
    }
}

@Suite("the documents' code compiles as written", .serialized)
struct DocsCodeTests {
    @Test("every C block of README.md and docs/ compiles with -Wall -Werror against libaudiosession")
    func cBlocks() throws {
        let directory = try makeTemporaryDirectory("recd-docs-code")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var compiled = 0
        for document in try DocumentCode.documents() {
            for (index, block) in DocumentCode.blocks("c", in: document.text).enumerated() {
                let name = document.path.replacingOccurrences(of: "/", with: "_") + "-\(index + 1)"
                let source = directory + "/" + name + ".c"
                try block.write(toFile: source, atomically: true, encoding: .utf8)
                _ = try Examples.compileC(name, into: directory, source: source)
                compiled += 1
            }
        }
        #expect(compiled >= 1, "no C block found in the documents")
    }

    @Test("every Swift block of README.md and docs/ type-checks against the built modules (AudioSession)")
    func swiftBlocks() throws {
        let directory = try makeTemporaryDirectory("recd-docs-code")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let root = ExternalTools.packageRoot
        // The system-library targets' module maps, as SwiftPM hands them to the compiler.
        let sources = try FileManager.default.contentsOfDirectory(atPath: root + "/Sources").filter { $0.hasPrefix("C") }
        var includes: [String] = []
        for target in sources.sorted() {
            includes += ["-I", root + "/Sources/" + target]
            if FileManager.default.fileExists(atPath: root + "/Sources/" + target + "/include") {
                includes += ["-I", root + "/Sources/" + target + "/include"]
            }
        }
        var checked = 0
        for document in try DocumentCode.documents() {
            for (index, block) in DocumentCode.blocks("swift", in: document.text).enumerated() {
                let source = directory + "/" + document.path.replacingOccurrences(of: "/", with: "_") + "-\(index + 1).swift"
                try block.write(toFile: source, atomically: true, encoding: .utf8)
                let modules = productsDirectory.appendingPathComponent("Modules").path
                let result = try ExternalTools.run("swiftc", ["-typecheck", "-I", modules] + includes + [source])
                #expect(result.status == 0, "\(document.path) Swift block \(index + 1):\n\(result.stderr)")
                checked += 1
            }
        }
        #expect(checked >= 1, "no Swift block found in the documents")
    }

    @Test("the check has teeth: a snippet with an undeclared name or no main does not compile")
    func teeth() throws {
        let markdown = "text\n```c\n#include <audiosession.h>\nas_session *s = as_session_new(\"a\", NULL, NULL);\n```\n"
        let blocks = DocumentCode.blocks("c", in: markdown)
        #expect(blocks.count == 1 && blocks[0].hasPrefix("#include <audiosession.h>\n"))
        let directory = try makeTemporaryDirectory("recd-docs-code")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let source = directory + "/snippet.c"
        try blocks[0].write(toFile: source, atomically: true, encoding: .utf8)
        let include = ExternalTools.packageRoot + "/libaudiosession"
        let failed = try ExternalTools.run("cc", ["-Wall", "-Werror", "-fsyntax-only", "-I", include, source])
        #expect(failed.status != 0, "a snippet compiled: \(failed.stdout)")
        #expect(!failed.stderr.contains("No such file"), "the header was not found: \(failed.stderr)")
    }
}
