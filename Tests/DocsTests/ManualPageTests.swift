// The manual pages in docs/man (scdoc) against the code they describe: every recctl command
// and its options (RecctlKit's command table), every config key of every section (the config
// interpreter's key lists), and the options recd and recd-signal print with --help. A command,
// key or option added to the code without its page fails here, naming the page and what is
// missing.
import Foundation
@testable import RecctlKit
@testable import SystemSupport
import Testing
import TestSupport

/// One scdoc page of docs/man, read as lines.
struct ManualPage {
    let name: String
    let lines: [String]

    init(_ name: String) throws {
        self.name = name
        let path = ExternalTools.packageRoot + "/docs/man/" + name
        lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
    }

    init(name: String, lines: [String]) {
        self.name = name
        self.lines = lines
    }

    /// The page without the definition of `term` (its term line and indented text).
    func removing(_ term: String) -> ManualPage {
        var kept: [String] = []
        var dropping = false
        for line in lines {
            if let found = Self.term(of: line) { dropping = found == term }
            else if !line.hasPrefix("\t") { dropping = false }
            if !dropping { kept.append(line) }
        }
        return ManualPage(name: name, lines: kept)
    }

    var path: String { "docs/man/" + name }

    /// The term a definition line starts with: `*session set* _APP_ ...` → `session set`.
    /// Definition lines start at column 0 with a bold term; their text follows indented.
    static func term(of line: String) -> String? {
        guard line.hasPrefix("*"), let end = line.dropFirst().firstIndex(of: "*") else { return nil }
        let term = String(line[line.index(after: line.startIndex)..<end])
        return term.isEmpty ? nil : term
    }

    /// The page's `## ` subsections, each with its lines (until the next `#` heading).
    var subsections: [(heading: String, lines: [String])] {
        var result: [(heading: String, lines: [String])] = []
        for line in lines {
            if line.hasPrefix("## ") {
                result.append((String(line.dropFirst(3)), []))
            } else if line.hasPrefix("# ") {
                result.append(("", []))
            } else if !result.isEmpty {
                result[result.count - 1].lines.append(line)
            }
        }
        return result
    }

    /// Each definition: its term, and its term line with the indented lines after it.
    static func definitions(in lines: [String]) -> [(term: String, text: String)] {
        var result: [(term: String, text: String)] = []
        for line in lines {
            if let term = term(of: line) {
                result.append((term, line))
            } else if line.hasPrefix("\t"), !result.isEmpty {
                result[result.count - 1].text += "\n" + line
            }
        }
        return result
    }
}

@Suite("manual pages: docs/man describes every command, config key and option")
struct ManualPageTests {
    @Test("every page renders with scdoc (a line that starts with [ is a table to scdoc, not text)")
    func pagesRender() throws {
        let directory = ExternalTools.packageRoot + "/docs/man"
        let pages = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".scd") }
        #expect(pages.count >= 4)
        for page in pages {
            // scdoc reads the page on its standard input.
            let process = try ExternalTools.process("scdoc", [])
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: directory + "/" + page))
            process.standardOutput = FileHandle.nullDevice
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            process.waitUntilExit()
            let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "\(page) does not render: \(said)")
        }
    }

    @Test("recd.conf(5) describes every key of every section, under that section, and no other")
    func configKeys() throws {
        let problems = Self.configProblems(try ManualPage("recd.conf.5.scd"))
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    static func configProblems(_ page: ManualPage) -> [String] {
        let subsections = page.subsections
        var problems: [String] = []
        for kind in ConfigSectionKind.allCases {
            let heading = "[\(kind.rawValue)" + (kind.nameNoun == nil ? "]" : " ")
            guard let section = subsections.first(where: { $0.heading.hasPrefix(heading) }) else {
                problems.append("\(page.path): no `## \(heading)...` subsection for section [\(kind.rawValue)]")
                continue
            }
            let documented = ManualPage.definitions(in: section.lines).map(\.term)
            for key in kind.keys where !documented.contains(key) {
                problems.append(
                    "\(page.path): key `\(key)` of [\(kind.rawValue)] is missing; add `*\(key)* = _VALUE_` and its "
                        + "description under `## \(section.heading)`")
            }
            for term in documented where !kind.keys.contains(term) {
                problems.append(
                    "\(page.path): `## \(section.heading)` describes `\(term)`, which recd does not know in "
                        + "[\(kind.rawValue)]; remove it or fix its name")
            }
        }
        return problems
    }

    @Test("recctl(1) describes every command of recctl's command table with each of its options")
    func recctlCommands() throws {
        let problems = Self.recctlProblems(try ManualPage("recctl.1.scd"))
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    static func recctlProblems(_ page: ManualPage) -> [String] {
        guard let commandsSection = page.lines.firstIndex(of: "# COMMANDS") else {
            return ["\(page.path) has no # COMMANDS section"]
        }
        let rest = page.lines[(commandsSection + 1)...]
        let end = rest.firstIndex { $0.hasPrefix("# ") } ?? page.lines.endIndex
        let definitions = ManualPage.definitions(in: Array(page.lines[(commandsSection + 1)..<end]))
        let table = Recctl.commands.map { $0.path.joined(separator: " ") }
        var problems: [String] = []
        for spec in Recctl.commands {
            let command = spec.path.joined(separator: " ")
            guard let entry = definitions.first(where: { $0.term == command }) else {
                problems.append(
                    "\(page.path): command `recctl \(command)` is missing; add `*\(command)* ...` and its description "
                        + "under # COMMANDS")
                continue
            }
            let usageLine = entry.text.components(separatedBy: "\n")[0]
            for flag in spec.valueFlags + spec.boolFlags where !usageLine.contains("*--\(flag)*") {
                problems.append("\(page.path): `recctl \(command)` does not show its option --\(flag) (as `*--\(flag)*`)")
            }
        }
        for definition in definitions where !table.contains(definition.term) {
            problems.append("\(page.path): describes `recctl \(definition.term)`, which is not one of recctl's commands")
        }
        return problems
    }

    @Test("recd(8) and recd-signal(1) describe every option the programs' --help lists", arguments: [
        ("recd", "recd.8.scd"), ("recd-signal", "recd-signal.1.scd"),
    ])
    func programOptions(program: String, pageName: String) throws {
        let page = try ManualPage(pageName)
        let text = page.lines.joined(separator: "\n")
        let help = try ExternalTools.runExecutable(
            ExternalTools.productsDirectory.appendingPathComponent(program).path, ["--help"], timeout: 10)
        #expect(help.status == 0, "\(program) --help: \(help.stderr)")
        let regex = try NSRegularExpression(pattern: #"(?<![A-Za-z-])--[a-z][a-z-]*[a-z]"#)
        let output = help.stdout
        let options = Set(
            regex.matches(in: output, range: NSRange(output.startIndex..., in: output)).map {
                String(output[Range($0.range, in: output)!])
            })
            // `--opt=VALUE` in recd-signal's help is the general form, not an option.
            .subtracting(["--opt"])
        #expect(options.count >= 4, "\(program) --help names too few options to check: \(options.sorted())")
        let missing = options.sorted().filter { !text.contains("*\($0)*") }
        let message =
            "docs/man/\(pageName): \(program)'s option(s) \(missing.joined(separator: ", ")) from `\(program) --help` "
            + "are missing; describe each as `*--option*`"
        #expect(missing.isEmpty, "\(message)")
    }

    @Test("the checks have teeth: a page without a key, a command or an option fails them, naming it")
    func teeth() throws {
        let conf = try ManualPage("recd.conf.5.scd")
        #expect(
            Self.configProblems(conf.removing("pre_roll_seconds")).contains {
                $0.contains("key `pre_roll_seconds` of [archive] is missing") && $0.hasPrefix("docs/man/recd.conf.5.scd")
            })
        #expect(Self.configProblems(conf.removing("pre_roll_seconds")).contains { $0.contains("of [session] is missing") })
        let recctl = try ManualPage("recctl.1.scd")
        #expect(Self.recctlProblems(recctl.removing("archive export")).contains {
            $0.contains("command `recctl archive export` is missing")
        })
        let withoutFlag = ManualPage(
            name: recctl.name, lines: recctl.lines.map { $0.replacingOccurrences(of: " [*--force*]", with: "") })
        #expect(Self.recctlProblems(withoutFlag) == [
            "docs/man/recctl.1.scd: `recctl session deactivate` does not show its option --force (as `*--force*`)"
        ])
    }
}
