// SPEC §2: every error code's name, value and FourCC; messages that say what to do.
// SPEC §3/§4: the upstream numeric values of event fields.

import Testing

@testable import SessionPolicy

struct ErrorRow: Sendable, CustomTestStringConvertible {
    let name: String
    let value: Int32
    let fourCC: String?
    var testDescription: String { name }

    /// Parsed from the verbatim SPEC §2 rows: `| name | -50 |` or `| name | 'xxxx' 123 |`.
    static let all: [ErrorRow] = Spec.rows(Spec.errorTable + "\n" + Spec.recdErrorTable).map { cells in
        let parts = cells[1].split(separator: " ")
        if parts.count == 2 {
            return ErrorRow(name: cells[0], value: Int32(parts[1])!, fourCC: String(parts[0].dropFirst().dropLast()))
        }
        return ErrorRow(name: cells[0], value: Int32(parts[0])!, fourCC: nil)
    }
}

@Suite("SPEC §2 error codes")
struct ErrorCodeTests {
    @Test func tableIsComplete() {
        #expect(ErrorRow.all.count == 13 + 2)
        #expect(Set(ErrorCode.allCases.map(\.name)) == Set(ErrorRow.all.map(\.name)))
    }

    @Test(arguments: ErrorRow.all)
    func codeValueNameAndFourCC(_ row: ErrorRow) throws {
        let code = try #require(ErrorCode(name: row.name))
        #expect(code.name == row.name)
        #expect(code.rawValue == row.value)
        #expect(ErrorCode(rawValue: row.value) == code)
        #expect(code.fourCC == row.fourCC)
        if let fourCC = row.fourCC {
            // The spec's number is the FourCC's characters (checks the table itself).
            #expect(Spec.fourCCValue(fourCC) == row.value)
        }
    }

    @Test func settledConflictCannotInterruptOthersIsInt() {
        #expect(ErrorCode.cannotInterruptOthers.rawValue == 560_557_684)
        #expect(ErrorCode.cannotInterruptOthers.fourCC == "!int")
        #expect(ErrorCode.cannotStartPlaying.rawValue == 561_015_905)
        #expect(ErrorCode(name: "noSuchError") == nil)
    }

    @Test func descriptionIsTheRecctlForm() {
        let error = SessionError(.isBusy, "stop the streams first")
        #expect(error.description == "isBusy (560030580): stop the streams first")
        #expect(SessionError(.badParam, "x").description == "badParam (-50): x")
    }

    @Test func routeChangeReasonCodes() throws {
        let pairs = Spec.pairs(Spec.routeChangeReasons)
        #expect(pairs.count == RouteChangeReason.allCases.count)
        for (name, value) in pairs {
            let reason = try #require(RouteChangeReason(rawValue: value), "\(name)")
            #expect(reason.name == name)
        }
    }

    @Test func interruptionFieldValues() throws {
        for (name, value) in Spec.pairs(Spec.interruptionTypes) {
            let type = try #require(InterruptionType(rawValue: value))
            #expect(type.name == name)
        }
        for (name, value) in Spec.pairs(Spec.interruptionReasons) {
            let reason = try #require(InterruptionReason(rawValue: value))
            #expect(reason.name == name)
        }
    }

    @Test func priorityCallIsAboveNormal() {
        #expect(PriorityClass.normal < .call)
        #expect(!(PriorityClass.call < .normal))
    }
}

/// One way to make the policy fail, for the message check.
struct FailingCall: Sendable, CustomTestStringConvertible {
    let name: String
    let code: ErrorCode
    let call: @Sendable () throws -> Void
    var testDescription: String { name }
}

@Suite("SPEC §2 messages say what was wrong and what to do")
struct ErrorMessageTests {
    static func store(_ build: (inout SessionStore) throws -> Void) rethrows -> SessionStore {
        var store = SessionStore.fixture(ports: Ports.builtIn + [Ports.usbIn(), Ports.headphones()])
        try build(&store)
        return store
    }

    static let calls: [FailingCall] = [
        FailingCall(name: "unknown category", code: .badParam) { _ = try Vocabulary.category("bogus") },
        FailingCall(name: "audioProcessing", code: .badParam) { _ = try Vocabulary.category("audioProcessing") },
        FailingCall(name: "unknown mode", code: .badParam) { _ = try Vocabulary.mode("bogus") },
        FailingCall(name: "unknown option", code: .badParam) { _ = try Vocabulary.option("bogus") },
        FailingCall(name: "unknown policy", code: .badParam) { _ = try Vocabulary.policy("bogus") },
        FailingCall(name: "mode not accepted", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .record, mode: .spokenAudio)
        },
        FailingCall(name: "gameChat", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .playAndRecord, mode: .gameChat)
        },
        FailingCall(name: "option not accepted", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .playback, options: [.allowAirPlay])
        },
        FailingCall(name: "allowBluetoothHFP with multiRoute outside dualRoute", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .multiRoute, options: [.allowBluetoothHFP])
        },
        FailingCall(name: "dualRoute without allowBluetoothHFP", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .multiRoute, mode: .dualRoute)
        },
        FailingCall(name: "policy independent", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .playback, policy: .independent)
        },
        FailingCall(name: "policy longFormAudio with record", code: .badParam) {
            _ = try SessionConfiguration.validated(category: .record, policy: .longFormAudio)
        },
        FailingCall(name: "no such session", code: .expiredSession) { _ = try store { _ in }.session("ghost") },
        FailingCall(name: "deleted session", code: .expiredSession) {
            _ = try store { s in
                s.add("a")
                _ = try s.delete(app: "a")
            }.session("a")
        },
        FailingCall(name: "sample rate out of range", code: .badParam) {
            var s = store { $0.add("a") }
            _ = try s.setPreferences(app: "a", HardwarePreferences(sampleRate: 0))
        },
        FailingCall(name: "IO buffer NaN", code: .badParam) {
            var s = store { $0.add("a") }
            _ = try s.setPreferences(app: "a", HardwarePreferences(ioBufferDuration: .nan))
        },
        FailingCall(name: "unknown preferred input", code: .badParam) {
            var s = store { $0.add("a", .record) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(preferredInput: "ghostMic"))
        },
        FailingCall(name: "preferred input is an output", code: .badParam) {
            var s = store { $0.add("a", .record) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(preferredInput: "spk"))
        },
        FailingCall(name: "preferred input in playback", code: .incompatibleCategory) {
            var s = store { $0.add("a", .playback) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(preferredInput: "mic"))
        },
        FailingCall(name: "input channels in playback", code: .incompatibleCategory) {
            var s = store { $0.add("a", .playback) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(inputChannels: 1))
        },
        FailingCall(name: "output channels in record", code: .incompatibleCategory) {
            var s = store { $0.add("a", .record) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(outputChannels: 1))
        },
        FailingCall(name: "input channels out of range", code: .badParam) {
            var s = store { $0.add("a", .record) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(inputChannels: 99))
        },
        FailingCall(name: "output channels out of range", code: .badParam) {
            var s = store { $0.add("a", .playback) }
            _ = try s.setPreferences(app: "a", HardwarePreferences(outputChannels: 0))
        },
        FailingCall(name: "speaker override outside playAndRecord", code: .incompatibleCategory) {
            var s = store { $0.add("a", .playback) }
            _ = try s.overrideOutput(app: "a", speaker: true)
        },
        FailingCall(name: "speaker override without a speaker", code: .resourceNotAvailable) {
            var s = SessionStore.fixture(ports: [Ports.mic, Ports.receiver])
            s.add("a", .playAndRecord)
            _ = try s.overrideOutput(app: "a", speaker: true)
        },
        FailingCall(name: "activate without mic usage", code: .missingEntitlement) {
            var s = store { $0.add("a", .record, micUsage: nil) }
            _ = try s.activate(app: "a")
        },
        FailingCall(name: "activate below a call", code: .insufficientPriority) {
            var s = try store { s in
                s.add("call", .playAndRecord, priority: .call)
                _ = try s.activate(app: "call")
                s.add("a")
            }
            _ = try s.activate(app: "a")
        },
        FailingCall(name: "background would interrupt", code: .cannotInterruptOthers) {
            var s = try store { s in
                s.add("fg")
                _ = try s.activate(app: "fg")
                s.add("a", background: true)
            }
            _ = try s.activate(app: "a")
        },
        FailingCall(name: "deactivate with running streams", code: .isBusy) {
            var s = try store { s in
                s.add("a")
                _ = try s.activate(app: "a")
                s.setStreamsRunning(app: "a", true)
            }
            _ = try s.deactivate(app: "a", notifyOthers: false, force: false)
        },
        FailingCall(name: "activate while media services are lost", code: .mediaServicesFailed) {
            var s = store { s in
                s.add("a")
                _ = s.mediaServicesLost()
            }
            _ = try s.activate(app: "a")
        },
        FailingCall(name: "record in playback", code: .incompatibleCategory) {
            try store { $0.add("a", .playback) }.checkCanRecord(app: "a")
        },
        FailingCall(name: "record without mic usage", code: .missingEntitlement) {
            try store { $0.add("a", .record, micUsage: nil) }.checkCanRecord(app: "a")
        },
        FailingCall(name: "record with permission undetermined", code: .cannotStartRecording) {
            try store { $0.add("a", .record) }.checkCanRecord(app: "a")
        },
        FailingCall(name: "record with permission denied", code: .cannotStartRecording) {
            try store { s in
                s.add("a", .record)
                _ = s.setPermission(app: "a", .denied)
            }.checkCanRecord(app: "a")
        },
    ]

    @Test(arguments: calls)
    func messageSaysWhatToDo(_ failing: FailingCall) {
        do {
            try failing.call()
            Issue.record("the call succeeded")
        } catch let error as SessionError {
            #expect(error.code == failing.code)
            #expect(!error.message.isEmpty)
            #expect(error.message.lowercased() != "failed")
            #expect(saysWhatToDo(error.message), "no hint of what to do in: \(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}

/// What to do is said in the caller's terms: one remedy, four wordings, none of them another
/// interface's (a C program is never told to pass a recctl flag).
@Suite("remedies worded for the caller's interface")
struct RemedyWordingTests {
    static let remedies: [Remedy] = [
        .declareMicUsage, .configure(app: "radio", again: false), .configure(app: "radio", again: true),
        .stopStreamsOrForce(app: "radio"), .addModeOrDropOption(.dualRoute), .addOption(.allowBluetoothHFP),
    ]

    @Test("each interface's words name only its own API", arguments: remedies)
    func ownTermsOnly(_ remedy: Remedy) {
        let recctl = remedy.words(for: .recctl), c = remedy.words(for: .c)
        let swift = remedy.words(for: .swift), wire = remedy.words(for: .protocol)
        // Neither library can force a deactivation or stop players (recctl starts those): both
        // point at recctl alike. Every other remedy has words of each interface's own.
        if case .stopStreamsOrForce = remedy {
            #expect(c == swift && Set([recctl, c, wire]).count == 3)
        } else {
            #expect(Set([recctl, c, swift, wire]).count == 4, "\(remedy): two interfaces share words")
        }
        for words in [c, swift, wire] { #expect(!words.contains("--"), "\(remedy): \(words)") }
        for words in [recctl, swift, wire] { #expect(!words.contains("as_") && !words.contains("AS_"), "\(words)") }
        for words in [recctl, c, wire] { #expect(!words.contains("AudioSession(") && !words.contains("setCategory")) }
    }

    @Test("the message joins the detail and the remedy; recctl's (and the log's) is the default")
    func messages() {
        let error = SessionError(
            .missingEntitlement, "radio declares no microphone usage description", remedy: .declareMicUsage)
        #expect(error.message == "radio declares no microphone usage description; set one with --mic-usage TEXT")
        #expect(
            error.message(for: .c)
                == "radio declares no microphone usage description; pass one as as_session_new's mic_usage argument "
                + "(a new session), then call as_set_category again")
        #expect(error.message(for: .protocol).hasSuffix("; send one as \"micUsage\" with session.set"))
        #expect(SessionError(.badParam, "plain").message(for: .c) == "plain")
        #expect(
            CallerInterface(rawValue: "libaudiosession") == .c && CallerInterface(rawValue: "AudioSession") == .swift)
    }
}
