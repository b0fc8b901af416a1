// recctl's usage, help and parsing come from one table (`Recctl.commands`): a required option
// is shown without brackets and refused when missing; a list option takes commas or spaces;
// the help lists what each option accepts, from the same enums recd checks against.
@testable import RecctlKit
import ControlProtocol
import SessionPolicy
import Testing

@Suite("recctl: usage, help and parsing from one table")
struct RecctlUsageTests {
    /// A command line the usage itself describes: the path, a word per positional, each
    /// required option with a value (a list option with two).
    static func minimalLine(_ spec: CommandSpec, dropping: String? = nil) -> [String] {
        var words = spec.path + spec.positionals.map { $0.split(separator: "|").first.map(String.init) ?? $0 }
        for flag in spec.requiredFlags where flag != dropping {
            words += ["--" + flag, flag == "output" ? "out.flac" : "value"]
        }
        return words
    }

    @Test("every command's table entry is consistent, and the line its usage describes parses; without a required option it does not")
    func usageMatchesParsing() throws {
        for spec in Recctl.commands {
            let name = spec.path.joined(separator: " ")
            #expect(Set(spec.requiredFlags).isSubset(of: spec.valueFlags), "\(name): a required flag is not a flag")
            #expect(Set(spec.listFlags).isSubset(of: spec.valueFlags), "\(name): a list flag is not a flag")
            for (term, _) in spec.accepts {
                #expect(
                    spec.valueFlags.contains(term) || spec.positionals.contains(term)
                        || spec.optionalPositionals.contains(term), "\(name): help for \(term), which it does not take")
            }
            for flag in spec.requiredFlags {
                #expect(!spec.usage.contains("[--\(flag) "), "\(name): required --\(flag) shown as optional")
            }
            let parsed = try ArgumentParser.parse(Self.minimalLine(spec), commands: Recctl.commands)
            #expect(parsed.spec.path == spec.path)
            for flag in spec.requiredFlags {
                #expect(throws: UsageError.self, "\(name) parsed without --\(flag)") {
                    try ArgumentParser.parse(Self.minimalLine(spec, dropping: flag), commands: Recctl.commands)
                }
            }
        }
    }

    @Test("archive export needs --app, --from and -o (--to is now unless given), and its usage says so")
    func exportRequired() throws {
        let spec = try #require(Recctl.commands.first { $0.path == ["archive", "export"] })
        #expect(spec.usage.contains("--app APP --from FROM -o FILE"), "\(spec.usage)")
        #expect(spec.usage.contains("[--to TO]"), "\(spec.usage)")
        do {
            _ = try ArgumentParser.parse(
                ["archive", "export", "--from", "a", "--to", "b", "-o", "x.wav"], commands: Recctl.commands)
            Issue.record("an export without --app parsed")
        } catch let error as UsageError {
            #expect(error.message.contains("--app"), "\(error.message)")
        }
    }

    @Test("archive export --credentials asks recd for Content Credentials of a WAV or FLAC clip; to - it is refused")
    func exportCredentials() throws {
        for file in ["x.wav", "x.flac"] {
            let parsed = try ArgumentParser.parse(
                ["archive", "export", "--app", "a", "--from", "now", "-o", file, "--credentials"],
                commands: Recctl.commands)
            guard case .archiveExport(let request) = try Recctl.buildRequest(parsed) else {
                Issue.record("not an archive.export")
                return
            }
            #expect(request.credentials && !request.proof)
        }
        let piped = try ArgumentParser.parse(
            ["archive", "export", "--app", "a", "--from", "now", "-o", "-", "--credentials"], commands: Recctl.commands)
        do {
            _ = try Recctl.buildRequest(piped)
            Issue.record("--credentials to standard output built a request")
        } catch let error as UsageError {
            #expect(error.message.contains("not -"), "\(error.message)")
        }
        let key = try ArgumentParser.parse(["archive", "key", "--csr"], commands: Recctl.commands)
        #expect(key.has("csr"))
    }

    @Test("a list option takes commas or spaces; words after it are a positional until the positionals are there")
    func lists() throws {
        let spaced = try ArgumentParser.parse(
            ["session", "set", "radio", "--category", "playback", "--options", "duckOthers", "mixWithOthers", "--mode",
             "spokenAudio"], commands: Recctl.commands)
        #expect(spaced.value("options") == "duckOthers,mixWithOthers" && spaced.value("mode") == "spokenAudio")
        let commas = try ArgumentParser.parse(
            ["session", "set", "radio", "--options", "duckOthers,mixWithOthers", "--category", "playback"],
            commands: Recctl.commands)
        #expect(commas.value("options") == "duckOthers,mixWithOthers")
        let before = try ArgumentParser.parse(
            ["session", "set", "--options", "duckOthers", "radio", "--category", "playback"], commands: Recctl.commands)
        #expect(before.positionals == ["radio"] && before.value("options") == "duckOthers")
        // The request recctl builds from it carries both options.
        guard case .sessionSet(let settings) = try Recctl.buildRequest(spaced) else {
            Issue.record("not a session.set")
            return
        }
        #expect(settings.options == [.duckOthers, .mixWithOthers])
    }

    @Test("session set's help lists every category, mode, option and policy recd knows")
    func helpListsValues() throws {
        let help = try #require(Recctl.commands.first { $0.path == ["session", "set"] }).help
        let words = Set(help.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
        for value in Category.allCases.map(\.rawValue) + Mode.allCases.map(\.rawValue)
            + CategoryOption.allCases.map(\.rawValue) + RouteSharingPolicy.allCases.map(\.rawValue)
        {
            #expect(words.contains(value), "\(value) is not in the help:\n\(help)")
        }
        #expect(help.split(separator: "\n").allSatisfy { $0.count <= HelpText.width })
    }
}
