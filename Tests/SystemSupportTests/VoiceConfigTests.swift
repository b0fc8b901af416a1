// `[voice] echo_suppression`: the default (the one the double-talk table chose,
// docs/voice-processing.md), each word, and a bad value refused with its line, section and key.

import Testing

@testable import SystemSupport

@Suite("[voice] echo_suppression")
struct VoiceConfigTests {
    func parse(_ text: String) throws(ConfigError) -> RecdConfig {
        try ConfigLoader.parse(
            text: text, source: "test.conf", environment: ["HOME": "/home/ann", "XDG_RUNTIME_DIR": "/run/user/1000"],
            isRoot: false)
    }

    @Test("the default, and each of low, moderate and high")
    func words() throws {
        #expect(try parse("").voice.echoSuppression == .moderate)
        #expect(try parse("[voice]\n").voice.echoSuppression == .moderate)
        for word in EchoSuppressionSetting.allCases {
            #expect(try parse("[voice]\necho_suppression = \(word.rawValue)\n").voice.echoSuppression == word)
        }
    }

    @Test("a value that is not low, moderate or high is refused naming the key and the words to use")
    func badValue() {
        do {
            _ = try parse("[voice]\n\necho_suppression = loud\n")
            Issue.record("echo_suppression = loud was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains("test.conf:3"), "\(text)")
            #expect(text.contains("[voice] echo_suppression"), "\(text)")
            #expect(text.contains("low, moderate, high"), "\(text)")
        }
        #expect(throws: ConfigError.self) { try parse("[voice]\nsuppression = low\n") }
    }
}
