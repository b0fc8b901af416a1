// The module graph is the documented one: docs/architecture.md's table against Package.swift
// and every `import` in Sources/.
import Foundation
import TestSupport
import Testing

/// One row of docs/architecture.md's module table.
struct ModuleRow: Sendable, Equatable {
    var module: String
    var allowed: Set<String>
}

enum ModuleMap {
    static let root = ExternalTools.packageRoot

    /// The table rows: `| `Name` | job | `A`, `B` |` (— or "standard library only": nothing).
    static func documented() throws -> [ModuleRow] {
        let text = try String(contentsOfFile: root + "/docs/architecture.md", encoding: .utf8)
        return text.split(separator: "\n").compactMap { line -> ModuleRow? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count == 5, cells[1].hasPrefix("`"), cells[1].hasSuffix("`") else { return nil }
            return ModuleRow(module: String(cells[1].dropFirst().dropLast()), allowed: Set(backticked(cells[3])))
        }
    }

    static func backticked(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }
            .map { String($0.element) }
    }

    /// Package.swift's targets under Sources/ and their dependencies.
    static func packageTargets() throws -> [String: Set<String>] {
        let text = try String(contentsOfFile: root + "/Package.swift", encoding: .utf8)
        var targets: [String: Set<String>] = [:]
        let pattern =
            #"\.(target|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)"(?:,\s*(?:path:\s*"[^"]*",\s*)?dependencies:\s*\[([^\]]*)\])?"#
        let regex = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        for match in regex.matches(in: text, range: range) {
            let name = String(text[Range(match.range(at: 2), in: text)!])
            let dependencies = Range(match.range(at: 3), in: text).map { String(text[$0]) } ?? ""
            // Targets declared with a path live outside Sources/ (TestSupport): not modules here.
            if text[Range(match.range, in: text)!.upperBound...].drop(while: { $0 == " " }).hasPrefix(", path:")
                || text[Range(match.range, in: text)!].contains("path:")
            {
                continue
            }
            targets[name] = Set(
                dependencies.split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(
                        in: CharacterSet(charactersIn: "\""))
                }.filter { !$0.isEmpty })
        }
        return targets
    }

    /// Every module each Sources/<module> file imports (any access level or attribute).
    static func imports(of module: String) throws -> [String: [String]] {
        try imports(inDirectory: root + "/Sources/" + module)
    }

    static func imports(inDirectory directory: String) throws -> [String: [String]] {
        let regex = try NSRegularExpression(
            pattern:
                #"^\s*(?:@[A-Za-z_]+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|func|var|let|protocol|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#,
            options: [.anchorsMatchLines])
        var found: [String: [String]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let file = enumerator?.nextObject() as? String {
            guard file.hasSuffix(".swift") else { continue }
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let name = String(text[Range(match.range(at: 1), in: text)!])
                found[name, default: []].append(file)
            }
        }
        return found
    }
}

@Suite("the module map: docs/architecture.md is the package's graph")
struct ModuleMapTests {
    @Test("every module under Sources/ has one row, and every row is a module")
    func everyModuleHasARow() throws {
        let rows = try ModuleMap.documented()
        #expect(rows.count == Set(rows.map(\.module)).count, "a module has two rows")
        let directories = try FileManager.default.contentsOfDirectory(atPath: ModuleMap.root + "/Sources")
            .filter { !$0.hasPrefix(".") }
        #expect(Set(rows.map(\.module)) == Set(directories))
        #expect(Set(try ModuleMap.packageTargets().keys) == Set(directories))
        // README's layout table names every Swift module too.
        let readme = try String(contentsOfFile: ModuleMap.root + "/README.md", encoding: .utf8)
        for module in directories where !module.hasPrefix("C") {
            #expect(readme.contains("`Sources/\(module)`"), "README's layout table lacks Sources/\(module)")
        }
    }

    @Test("Package.swift's dependencies are exactly the project modules of each row")
    func packageMatchesTheTable() throws {
        let rows = try ModuleMap.documented()
        let targets = try ModuleMap.packageTargets()
        let projectModules = Set(targets.keys)
        for row in rows {
            let declared = targets[row.module] ?? []
            #expect(
                declared == row.allowed.intersection(projectModules),
                "\(row.module): Package.swift has \(declared.sorted())")
        }
    }

    @Test("no source file imports a module its row does not allow")
    func importsStayInTheirRow() throws {
        let rows = try ModuleMap.documented()
        var checked = 0
        for row in rows {
            for (module, files) in try ModuleMap.imports(of: row.module) where module != row.module {
                checked += 1
                #expect(
                    row.allowed.contains(module), "\(row.module) imports \(module) in \(files.sorted()), not in its row"
                )
            }
        }
        #expect(checked > 20, "the import scan found almost nothing: \(checked)")
    }

    @Test("each C library is imported by exactly one Swift module")
    func eachCLibraryHasOneImporter() throws {
        let cLibraries = [
            "CJack", "CFLAC", "CALSA", "CInih", "CSystemd", "CSoxr", "CLinux", "CSQLite", "CSndfile", "CEbur128",
            "CMicroHTTPD",
            "CWebRTCAudioProcessing", "CSodium", "COpenSSL", "CSpeexDSP", "CCurl",
        ]
        // The list is every system-library target and every C or C++ target (a shim over a C++
        // library: a directory under Sources/ without Swift): a new C library cannot slip past.
        let package = try String(contentsOfFile: ModuleMap.root + "/Package.swift", encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"\.systemLibrary\(\s*name:\s*"([^"]+)""#)
        var declared = regex.matches(in: package, range: NSRange(package.startIndex..., in: package)).map {
            String(package[Range($0.range(at: 1), in: package)!])
        }
        for directory in try FileManager.default.contentsOfDirectory(atPath: ModuleMap.root + "/Sources")
        where !directory.hasPrefix(".") && !declared.contains(directory) {
            let files =
                FileManager.default.enumerator(atPath: ModuleMap.root + "/Sources/" + directory)?
                .allObjects.compactMap { $0 as? String } ?? []
            if !files.contains(where: { $0.hasSuffix(".swift") }) { declared.append(directory) }
        }
        #expect(Set(declared) == Set(cLibraries), "C library targets: \(declared.sorted())")
        let modules = try FileManager.default.contentsOfDirectory(atPath: ModuleMap.root + "/Sources")
            .filter { !$0.hasPrefix(".") && !cLibraries.contains($0) }
        // The exceptions, documented in docs/architecture.md: recd-signal, the tests' oracle,
        // talks to JACK itself, independent of AudioEngine on purpose (a shared JACK layer could
        // hide a bug from the tests that look for it); the example applications are JACK
        // applications of their own, as every application that uses the AudioSession library is.
        let ownJackClients = ["recd-signal", "audiosession-tone", "audiosession-record"]
        var importers: [String: Set<String>] = [:]
        for module in modules {
            for imported in try ModuleMap.imports(of: module).keys where cLibraries.contains(imported) {
                importers[imported, default: []].insert(module)
            }
        }
        for module in ownJackClients {
            #expect(importers["CJack"]?.contains(module) == true, "the exception for \(module) is stale")
            importers["CJack"]?.remove(module)
        }
        for library in cLibraries {
            #expect(importers[library]?.count == 1, "\(library) is imported by \(importers[library]?.sorted() ?? [])")
        }
    }

    @Test("the scan has teeth: an import outside the row is seen")
    func scannerSeesImports() throws {
        let directory = NSTemporaryDirectory() + "recd-module-probe-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try
            "internal import Glibc\n@preconcurrency import Foundation\n  public import struct Synchronization.Mutex\n// import Nope\n"
            .write(toFile: directory + "/Probe.swift", atomically: true, encoding: .utf8)
        let found = try ModuleMap.imports(inDirectory: directory)
        #expect(Set(found.keys) == ["Glibc", "Foundation", "Synchronization"])
    }
}
