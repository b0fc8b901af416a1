// What modes and prefersEchoCancelledInput do to a session's capture: the table, then the
// rules that must hold for every accepted category × mode pair.

import Testing

@testable import SessionPolicy

@Suite("capture processing: voiceChat/videoChat, measurement, prefersEchoCancelledInput")
struct CaptureProcessingTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let prefers: Bool
        let input: Bool
        let output: Bool
        let available: Bool
        let processing: CaptureProcessing
        enum Route: Sendable { case both, inputOnly, outputOnly }

        init(
            _ category: Category, _ mode: Mode, prefers: Bool, _ route: Route, available: Bool,
            _ processing: CaptureProcessing
        ) {
            self.category = category
            self.mode = mode
            self.prefers = prefers
            input = route != .outputOnly
            output = route != .inputOnly
            self.available = available
            self.processing = processing
        }

        var testDescription: String {
            "\(category.rawValue)/\(mode.rawValue) prefers \(prefers) route "
                + "\(input ? "in" : "-")\(output ? "out" : "-")"
                + " → \(processing.rawValue)"
        }
    }

    static let cases: [Case] = [
        // voiceChat and videoChat process with or without the preference, on a two-way route.
        Case(.playAndRecord, .voiceChat, prefers: false, .both, available: true, .voice),
        Case(.playAndRecord, .videoChat, prefers: true, .both, available: true, .voice),
        // ... and not on a route without an output (no far end to cancel; nothing is processed).
        Case(.playAndRecord, .voiceChat, prefers: false, .inputOnly, available: false, .none),
        Case(.playAndRecord, .videoChat, prefers: false, .outputOnly, available: false, .none),
        // The preference alone: echo cancellation only, in playAndRecord on a two-way route.
        Case(.playAndRecord, .default, prefers: true, .both, available: true, .echoCancellation),
        Case(.playAndRecord, .spokenAudio, prefers: true, .both, available: true, .echoCancellation),
        Case(.playAndRecord, .videoRecording, prefers: true, .both, available: true, .echoCancellation),
        Case(.playAndRecord, .default, prefers: false, .both, available: true, .none),
        Case(.playAndRecord, .default, prefers: true, .inputOnly, available: false, .none),
        // measurement: nothing, whatever is preferred.
        Case(.playAndRecord, .measurement, prefers: true, .both, available: false, .none),
        Case(.record, .measurement, prefers: false, .inputOnly, available: false, .none),
        // Other categories never have it.
        Case(.record, .default, prefers: true, .both, available: false, .none),
        Case(.multiRoute, .default, prefers: true, .both, available: false, .none),
        Case(.playback, .default, prefers: true, .outputOnly, available: false, .none),
    ]

    @Test("the table", arguments: cases)
    func tableRow(_ row: Case) {
        #expect(
            CaptureProcessing.isEchoCancelledInputAvailable(
                category: row.category, mode: row.mode, routeHasInput: row.input, routeHasOutput: row.output)
                == row.available)
        #expect(
            CaptureProcessing.of(
                category: row.category, mode: row.mode, prefersEchoCancelledInput: row.prefers,
                routeHasInput: row.input, routeHasOutput: row.output) == row.processing)
    }

    @Test("for every accepted category × mode: measurement and other categories are never processed")
    func rulesHoldEverywhere() {
        var processed = 0
        for (category, modes) in acceptedModes {
            for mode in modes {
                for prefers in [false, true] {
                    for input in [false, true] {
                        for output in [false, true] {
                            let processing = CaptureProcessing.of(
                                category: category, mode: mode, prefersEchoCancelledInput: prefers,
                                routeHasInput: input, routeHasOutput: output)
                            if processing != .none { processed += 1 }
                            if mode == .measurement || category != .playAndRecord || !(input && output) {
                                #expect(processing == .none, "\(category)/\(mode) \(prefers) \(input) \(output)")
                            }
                            if processing == .voice { #expect(mode == .voiceChat || mode == .videoChat) }
                            if processing == .echoCancellation { #expect(prefers) }
                        }
                    }
                }
            }
        }
        // playAndRecord's voiceChat and videoChat twice each (either preference), and its
        // default, spokenAudio and videoRecording with the preference.
        #expect(processed == 7)
    }

    @Test("the store keeps the preference; a session's processing follows it, its mode and its route")
    func storePreference() throws {
        var store = SessionStore.fixture()
        store.add("call", .playAndRecord)
        store.add("radio", .playback)
        _ = try store.activate(app: "call")
        #expect(store.sessions["call"]?.isEchoCancelledInputAvailable == true)
        #expect(store.sessions["call"]?.captureProcessing == CaptureProcessing.none)
        #expect(
            try store.setPrefersEchoCancelledInput(app: "call", true) == [
                .sessionChanged(app: "call"),
                .captureProcessingChange(app: "call", previous: .none, current: .echoCancellation),
            ])
        #expect(store.sessions["call"]?.captureProcessing == .echoCancellation)
        store.add("call", .playAndRecord, .voiceChat)
        #expect(store.sessions["call"]?.captureProcessing == .voice)
        store.add("call", .playAndRecord, .measurement)
        #expect(store.sessions["call"]?.captureProcessing == CaptureProcessing.none)
        #expect(store.sessions["call"]?.isEchoCancelledInputAvailable == false)
        // A category that cannot have it: refused, and nothing changed.
        let before = StoreSnapshot(store)
        #expect(throws: SessionError.self) { try store.setPrefersEchoCancelledInput(app: "radio", true) }
        #expect(StoreSnapshot(store) == before)
        #expect(store.sessions["radio"]?.isEchoCancelledInputAvailable == false)
    }

    @Test("every change of a session's processing is an effect, after the routeChange that brought it; others none")
    func processingChangeEffects() throws {
        func changes(_ effects: [PolicyEffect]) -> [PolicyEffect] {
            effects.filter { if case .captureProcessingChange = $0 { true } else { false } }
        }
        var store = SessionStore.fixture()
        // A new session has nothing running: no change for it.
        #expect(changes(store.add("call", .playAndRecord)) == [])
        store.add("radio", .playback)
        _ = try store.activate(app: "call")
        // The mode.
        #expect(
            changes(store.add("call", .playAndRecord, .voiceChat))
                == [.captureProcessingChange(app: "call", previous: .none, current: .voice)])
        #expect(changes(store.add("call", .playAndRecord, .videoChat)) == [])
        // The preference, under voiceChat, changes nothing; set again, nothing.
        #expect(changes(try store.setPrefersEchoCancelledInput(app: "call", true)) == [])
        #expect(
            changes(store.add("call", .playAndRecord))
                == [.captureProcessingChange(app: "call", previous: .voice, current: .echoCancellation)])
        #expect(changes(try store.setPrefersEchoCancelledInput(app: "call", true)) == [])
        // The route losing its outputs, and gaining one again: after the routeChange.
        let outputsGone = store.updatePorts([Ports.mic])
        #expect(
            changes(outputsGone)
                == [.captureProcessingChange(app: "call", previous: .echoCancellation, current: .none)])
        let routeChanged = outputsGone.firstIndex {
            if case .routeChange(app: "call", _, _, _) = $0 { true } else { false }
        }
        let processingChanged = outputsGone.firstIndex {
            if case .captureProcessingChange = $0 { true } else { false }
        }
        #expect(routeChanged != nil && processingChanged != nil && routeChanged! < processingChanged!)
        #expect(
            changes(store.updatePorts(Ports.builtIn))
                == [.captureProcessingChange(app: "call", previous: .none, current: .echoCancellation)])
        // measurement: none; a category without output: none, from the same call.
        #expect(
            changes(store.add("call", .playAndRecord, .measurement))
                == [.captureProcessingChange(app: "call", previous: .echoCancellation, current: .none)])
        #expect(changes(store.add("call", .record)) == [])
        #expect(changes(try store.setPrefersEchoCancelledInput(app: "call", false)) == [])
        // Another session's change is not this one's.
        #expect(changes(store.add("radio", .playback, .spokenAudio)) == [])
    }

    @Test("preferring echo-cancelled input outside playAndRecord is incompatibleCategory, saying what to use")
    func preferenceValidation() throws {
        try CaptureProcessing.validatePreference(true, category: .playAndRecord)
        for category in Category.allCases {
            try CaptureProcessing.validatePreference(false, category: category)
            guard category != .playAndRecord else { continue }
            #expect {
                try CaptureProcessing.validatePreference(true, category: category)
            } throws: { error in
                let error = error as? SessionError
                return error?.code == .incompatibleCategory && error?.message.contains("playAndRecord") == true
            }
        }
    }
}
