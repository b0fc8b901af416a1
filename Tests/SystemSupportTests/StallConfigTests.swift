// `stall_seconds` in `[archive]` and `[session APP]`: the default, a session's own value, and
// the values refused.

import Testing

@testable import SystemSupport

private func parse(_ text: String) throws(ConfigError) -> RecdConfig {
    try ConfigLoader.parse(text: text, source: "test.conf", environment: ["HOME": "/home/ann"], isRoot: false)
}

@Suite("stall_seconds config")
struct StallConfigTests {
    @Test("default 2 s; [archive] sets every recorder's, a session its own; 0 turns the alarm off")
    func values() throws {
        #expect(try parse("[daemon]\n").archive.silence.stallSeconds == 2)
        let config = try parse(
            """
            [archive]
            stall_seconds = 5

            [session logger]
            category = record
            stall_seconds = 0.5

            [session other]
            category = record

            """)
        #expect(config.archive.silence.stallSeconds == 5)
        let logger = try #require(config.sessions.first { $0.app == "logger" })
        let other = try #require(config.sessions.first { $0.app == "other" })
        #expect(config.archive.silence.applying(logger.silence).stallSeconds == 0.5)
        #expect(config.archive.silence.applying(other.silence).stallSeconds == 5)
        #expect(try parse("[archive]\nstall_seconds = 0\n").archive.silence.stallSeconds == 0)
    }

    @Test("beyond 3600 s, negative or not a number: refused, naming the key")
    func refused() {
        for value in ["3601", "-1", "soon"] {
            do {
                _ = try parse("[archive]\nstall_seconds = \(value)\n")
                Issue.record("stall_seconds = \(value) was accepted")
            } catch {
                #expect("\(error)".contains("stall_seconds"), "\(error)")
            }
        }
    }
}
