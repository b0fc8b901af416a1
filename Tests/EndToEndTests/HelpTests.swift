// recctl's help: every command is listed with its usage, and each has its own help.
import Foundation
import Testing

@Suite("recctl help")
struct HelpTests {
    static let commands = [
        "status", "session list", "session show", "session set", "session activate", "session deactivate", "session prefer",
        "session override", "session delete", "permission list", "permission request", "permission grant", "permission deny",
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
}
