// recctl's help: every command is listed with its usage, and each has its own help.
import Foundation
import Testing

@Suite("recctl help")
struct HelpTests {
    static let commands = [
        "status", "session list", "session show", "session set", "session activate", "session deactivate", "session prefer",
        "session override", "session remove", "session delete", "permission list", "permission request", "permission grant", "permission deny",
        "permission reset", "mute", "play", "pause", "stop", "record start", "record stop", "archive list", "archive verify",
        "archive reindex", "cue", "meter", "routes", "watch",
    ]

    @Test("recctl --help lists every command of SPEC §12 with a summary")
    func overview() throws {
        let recctl = productsDirectory.appendingPathComponent("recctl").path
        let help = try runProgram(recctl, ["--help"])
        #expect(help.status == 0)
        for command in Self.commands {
            #expect(help.stdout.contains("recctl \(command)"), "--help lacks \(command)")
        }
        #expect(help.stdout.contains("Exit: 0 ok, 1 refused, 2 usage, 3 recd unreachable"))
    }

    @Test("per-command help shows the usage; an incomplete command exits 2 naming its subcommands")
    func perCommand() throws {
        let recctl = productsDirectory.appendingPathComponent("recctl").path
        let cue = try runProgram(recctl, ["help", "cue"])
        #expect(cue.status == 0 && cue.stdout.contains("recctl cue APP") && cue.stdout.contains("split on|off"))
        let set = try runProgram(recctl, ["session", "set", "--help"])
        #expect(set.status == 0 && set.stdout.contains("--category") && set.stdout.contains("--mic-usage"))
        let incomplete = try runProgram(recctl, ["record"])
        #expect(incomplete.status == 2 && incomplete.stderr.contains("start") && incomplete.stderr.contains("stop"))
    }

    @Test("--help, every per-command help and every usage error fit in 100 columns; summaries stand on their own lines")
    func width() throws {
        let recctl = productsDirectory.appendingPathComponent("recctl").path
        var texts = [("--help", try runProgram(recctl, ["--help"]).stdout)]
        for command in Self.commands {
            let words = command.split(separator: " ").map(String.init)
            let help = try runProgram(recctl, words + ["--help"])
            #expect(help.status == 0, "\(command) --help")
            texts.append(("\(command) --help", help.stdout))
            // A usage error prints the usage too.
            let wrong = try runProgram(recctl, words + ["--no-such-flag"])
            #expect(wrong.status == 2, "\(command) --no-such-flag")
            texts.append(("\(command) --no-such-flag", wrong.stderr))
        }
        for (what, text) in texts {
            #expect(!text.isEmpty, "\(what) printed nothing")
            for line in text.split(separator: "\n") {
                #expect(line.count <= 100, "\(what): \(line.count) columns: \(line)")
            }
        }
        // The longest usage is wrapped, not cut: every option still appears.
        let set = try runProgram(recctl, ["session", "set", "--help"]).stdout
        for option in ["--category", "--mode", "--options", "--policy", "--mic-usage", "--prefers-interruption"] {
            #expect(set.contains(option))
        }
        let lines = set.split(separator: "\n")
        #expect(
            lines.count >= 3 && lines.contains { $0.hasPrefix("    configure") }, "the summary has a line of its own: \(set)")
        // Then what each option accepts, one option a line.
        #expect(lines.last { $0.hasPrefix("    ") && !$0.hasPrefix("      ") }?.hasPrefix("    configure") == true, "\(set)")
        #expect(lines.contains { $0.hasPrefix("      --category: ambient") }, "\(set)")
    }
}
