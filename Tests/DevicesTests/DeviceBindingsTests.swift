// SPEC §4 (availability follows jack sense; capture switch off → builtInMicMuted) and §12
// (`[port] sense`): DeviceBindings as tables of (event → signals) steps.

import Testing

@testable import Devices

/// One row: the event folded in, the signals it must give, and (optionally) what
/// `isPlugged` must say afterwards for some ports.
struct Step: Sendable {
    var event: DeviceEvent
    var signals: [PortSignal]
    var plugged: [String: Bool?] = [:]
    var muted: [String: Bool] = [:]

    init(_ event: DeviceEvent, _ signals: [PortSignal], plugged: [String: Bool?] = [:], muted: [String: Bool] = [:]) {
        self.event = event
        self.signals = signals
        self.plugged = plugged
        self.muted = muted
    }
}

struct BindingCase: Sendable, CustomTestStringConvertible {
    var name: String
    var declarations: [DeviceBindings.Declaration]
    var steps: [Step]
    var testDescription: String { name }
}

private func jack(_ card: String, _ control: String, _ plugged: Bool) -> DeviceEvent {
    .jackSense(card: card, control: control, plugged: plugged)
}

private func jack(_ card: String, _ plugged: Bool) -> DeviceEvent {
    jack(card, "Headphone Jack", plugged)
}

private func capture(_ card: String, _ control: String, _ on: Bool) -> DeviceEvent {
    .captureSwitch(card: card, control: control, on: on)
}

private func capture(_ card: String, _ on: Bool) -> DeviceEvent {
    capture(card, "Capture Switch", on)
}

private typealias D = DeviceBindings.Declaration

let bindingCases: [BindingCase] = [
    BindingCase(
        name: "any card: plug and unplug",
        declarations: [D(port: "phones", sense: "Headphone Jack")],
        steps: [
            Step(.cardAdded(card("PCH", 0)), [], plugged: ["phones": nil]),
            Step(jack("PCH", false), [.plugged(port: "phones", false)], plugged: ["phones": false]),
            Step(jack("PCH", true), [.plugged(port: "phones", true)], plugged: ["phones": true]),
            Step(jack("PCH", false), [.plugged(port: "phones", false)], plugged: ["phones": false]),
        ]),
    BindingCase(
        name: "duplicate events give no signal",
        declarations: [D(port: "phones", sense: "Headphone Jack"), D(port: "mic", muteSwitch: "Capture Switch")],
        steps: [
            Step(jack("PCH", true), [.plugged(port: "phones", true)]),
            Step(jack("PCH", true), []),
            Step(jack("PCH", true), []),
            Step(capture("PCH", false), [.hardwareMuted(port: "mic", true)]),
            Step(capture("PCH", false), []),
            Step(.cardAdded(card("PCH", 0)), []),
            Step(jack("PCH", false), [.plugged(port: "phones", false)]),
        ]),
    BindingCase(
        name: "card id qualifier: only that card's control counts",
        declarations: [D(port: "usbPhones", sense: "hw:Device/Headphone Jack")],
        steps: [
            Step(.cardAdded(card("PCH", 0)), []),
            Step(jack("PCH", true), [], plugged: ["usbPhones": nil]),
            Step(.cardAdded(card("Device", 1, driver: "USB-Audio")), []),
            Step(jack("Device", false), [.plugged(port: "usbPhones", false)], plugged: ["usbPhones": false]),
            Step(jack("PCH", false), [], plugged: ["usbPhones": false]),
            Step(jack("Device", true), [.plugged(port: "usbPhones", true)], plugged: ["usbPhones": true]),
        ]),
    BindingCase(
        name: "CARD= spelling is the same as the bare id",
        declarations: [D(port: "phones", sense: "hw:CARD=PCH/Headphone Jack")],
        steps: [
            Step(jack("Other", true), []),
            Step(jack("PCH", true), [.plugged(port: "phones", true)]),
        ]),
    BindingCase(
        name: "card index qualifier follows the card that has the index",
        declarations: [D(port: "phones", sense: "hw:1/Headphone Jack")],
        steps: [
            // Before cardAdded the index of "USB" is unknown: the state is kept, not applied.
            Step(jack("USB", true), [], plugged: ["phones": nil]),
            Step(.cardAdded(card("USB", 1, driver: "USB-Audio")), [.plugged(port: "phones", true)]),
            Step(.cardAdded(card("PCH", 0)), []),
            Step(jack("PCH", false), [], plugged: ["phones": true]),
            Step(jack("USB", false), [.plugged(port: "phones", false)]),
        ]),
    BindingCase(
        name: "capture switch off → hardwareMuted, on → unmuted",
        declarations: [D(port: "mic", sense: nil, muteSwitch: "Capture Switch")],
        steps: [
            // On is the assumed state: its first report changes nothing.
            Step(capture("PCH", true), [], plugged: ["mic": nil], muted: ["mic": false]),
            Step(capture("PCH", false), [.hardwareMuted(port: "mic", true)], muted: ["mic": true]),
            Step(capture("PCH", true), [.hardwareMuted(port: "mic", false)], muted: ["mic": false]),
        ]),
    BindingCase(
        name: "several ports bound to different controls, one batch",
        declarations: [
            D(port: "phones", sense: "Headphone Jack"),
            D(port: "lineIn", sense: "Line Jack"),
            D(port: "headsetMic", sense: "Mic Jack", muteSwitch: "Mic Capture Switch"),
            D(port: "usbMic", muteSwitch: "hw:Device/Capture Switch"),
        ],
        steps: [
            Step(.cardAdded(card("PCH", 0)), []),
            Step(capture("PCH", "Mic Capture Switch", false), [.hardwareMuted(port: "headsetMic", true)]),
            Step(jack("PCH", "Mic Jack", true), [.plugged(port: "headsetMic", true)]),
            Step(jack("PCH", "Line Jack", false), [.plugged(port: "lineIn", false)]),
            Step(jack("PCH", "Headphone Jack", true), [.plugged(port: "phones", true)]),
            Step(capture("PCH", "Capture Switch", false), []),
            Step(capture("Device", "Capture Switch", false), [.hardwareMuted(port: "usbMic", true)]),
            Step(
                jack("PCH", "Headphone Jack", false), [.plugged(port: "phones", false)],
                plugged: ["phones": false, "lineIn": false, "headsetMic": true, "usbMic": nil],
                muted: ["headsetMic": true, "usbMic": true, "phones": false]),
        ]),
    BindingCase(
        name: "controls no port names are ignored",
        declarations: [D(port: "phones", sense: "Headphone Jack"), D(port: "mic", muteSwitch: "Mic Capture Switch")],
        steps: [
            Step(jack("PCH", "Speaker Jack", true), []),
            Step(jack("PCH", "Front Headphone Jack", true), []),
            Step(capture("PCH", "Line Capture Switch", false), []),
            Step(capture("PCH", "Capture Switch", false), []),
            Step(.cardRemoved(card: "Nowhere"), []),
            Step(jack("PCH", "Headphone Jack,index=1", true), [], plugged: ["phones": nil]),
        ]),
    BindingCase(
        name: "element index: Headphone Jack,index=1 is its own control",
        declarations: [D(port: "second", sense: "Headphone Jack,index=1")],
        steps: [
            Step(jack("PCH", "Headphone Jack", true), []),
            Step(jack("PCH", "Headphone Jack,index=1", false), [.plugged(port: "second", false)]),
        ]),
    BindingCase(
        name: "card removed: sense lost, mute released; back again: state returns",
        declarations: [
            D(port: "usbPhones", sense: "hw:Device/Headphone Jack"), D(port: "usbMic", muteSwitch: "Capture Switch"),
        ],
        steps: [
            Step(.cardAdded(card("Device", 1, driver: "USB-Audio")), []),
            Step(jack("Device", true), [.plugged(port: "usbPhones", true)]),
            Step(capture("Device", false), [.hardwareMuted(port: "usbMic", true)]),
            Step(
                .cardRemoved(card: "Device"),
                [.senseLost(port: "usbPhones"), .hardwareMuted(port: "usbMic", false)],
                plugged: ["usbPhones": nil], muted: ["usbMic": false]),
            Step(.cardRemoved(card: "Device"), []),
            Step(.cardAdded(card("Device", 2, driver: "USB-Audio")), []),
            Step(jack("Device", false), [.plugged(port: "usbPhones", false)]),
        ]),
    BindingCase(
        name: "any card: the first card seen with the control wins; the next takes over when it goes",
        declarations: [D(port: "phones", sense: "Headphone Jack")],
        steps: [
            Step(.cardAdded(card("PCH", 0)), []),
            Step(.cardAdded(card("Device", 1)), []),
            Step(jack("Device", true), [.plugged(port: "phones", true)]),
            // PCH was seen first: once it reports, it decides.
            Step(jack("PCH", false), [.plugged(port: "phones", false)]),
            Step(jack("Device", false), []),
            Step(jack("Device", true), []),
            Step(.cardRemoved(card: "PCH"), [.plugged(port: "phones", true)]),
            Step(.cardRemoved(card: "Device"), [.senseLost(port: "phones")], plugged: ["phones": nil]),
        ]),
    BindingCase(
        name: "an index taken over by a new card drops the old card's state",
        declarations: [D(port: "phones", sense: "hw:1/Headphone Jack")],
        steps: [
            Step(.cardAdded(card("Old", 1)), []),
            Step(jack("Old", true), [.plugged(port: "phones", true)]),
            // Unplugged and replaced faster than the removal was seen.
            Step(.cardAdded(card("New", 1)), [.senseLost(port: "phones")]),
            Step(jack("Old", false), []),
            Step(jack("New", false), [.plugged(port: "phones", false)]),
        ]),
    BindingCase(
        name: "no sense bound: isPlugged is nil whatever happens",
        declarations: [D(port: "lineOut")],
        steps: [
            Step(jack("PCH", "Line Out Jack", false), [], plugged: ["lineOut": nil, "unknownPort": nil]),
            Step(jack("PCH", "Headphone Jack", true), [], plugged: ["lineOut": nil]),
        ]),
]

@Suite("DeviceBindings")
struct DeviceBindingsTests {
    @Test(arguments: bindingCases)
    func table(_ testCase: BindingCase) throws {
        var bindings = try DeviceBindings(testCase.declarations)
        #expect(bindings.ports == testCase.declarations.map(\.port))
        for (number, step) in testCase.steps.enumerated() {
            let signals = bindings.apply(step.event)
            #expect(signals == step.signals, "step \(number + 1): \(step.event)")
            for (port, plugged) in step.plugged {
                #expect(bindings.isPlugged(port: port) == plugged, "step \(number + 1): isPlugged(\(port))")
            }
            for (port, muted) in step.muted {
                #expect(bindings.isHardwareMuted(port: port) == muted, "step \(number + 1): isHardwareMuted(\(port))")
            }
        }
    }

    @Test("a batch gives the same signals as its events one by one")
    func batchApply() throws {
        let declarations = [D(port: "phones", sense: "Headphone Jack"), D(port: "mic", muteSwitch: "Capture Switch")]
        let events: [DeviceEvent] = [
            .cardAdded(card("PCH", 0)), jack("PCH", true), capture("PCH", false), jack("PCH", true), jack("PCH", false),
        ]
        var batched = try DeviceBindings(declarations)
        var single = try DeviceBindings(declarations)
        #expect(batched.apply(events) == events.flatMap { single.apply($0) })
        #expect(
            batched.apply([]) == [] && batched.isPlugged(port: "phones") == false
                && batched.isHardwareMuted(port: "mic"))
    }

    @Test(
        "sense values that parse",
        arguments: [
            ("Headphone Jack", SenseSelector(control: "Headphone Jack")),
            ("  Mic Jack  ", SenseSelector(control: "Mic Jack")),
            ("hw:PCH/Headphone Jack", SenseSelector(card: .id("PCH"), control: "Headphone Jack")),
            ("hw:CARD=PCH/Headphone Jack", SenseSelector(card: .id("PCH"), control: "Headphone Jack")),
            ("hw:0/Headphone Jack", SenseSelector(card: .index(0), control: "Headphone Jack")),
            ("hw:31/Line Jack", SenseSelector(card: .index(31), control: "Line Jack")),
            (
                "hw:Device_1/Headphone - Output Jack",
                SenseSelector(card: .id("Device_1"), control: "Headphone - Output Jack")
            ),
            ("HDMI/DP,pcm=3 Jack", SenseSelector(control: "HDMI/DP,pcm=3 Jack")),
            ("hw:PCH/HDMI/DP,pcm=3 Jack", SenseSelector(card: .id("PCH"), control: "HDMI/DP,pcm=3 Jack")),
            ("Headphone Jack,index=1", SenseSelector(control: "Headphone Jack,index=1")),
        ])
    func parsesSense(_ text: String, _ expected: SenseSelector) throws {
        #expect(try DeviceBindings.parseSense(text) == expected)
        // The description is itself a valid sense value for the same control.
        #expect(try DeviceBindings.parseSense(expected.description) == expected)
    }

    @Test(
        "malformed sense values are rejected with a message that says what to write",
        arguments: [
            ("", "is empty"),
            ("   ", "is empty"),
            ("hw:", "names no card after 'hw:'"),
            ("hw:/", "names no card between 'hw:' and '/'"),
            ("hw:/Headphone Jack", "names no card between 'hw:' and '/'"),
            ("hw:CARD=/Headphone Jack", "names no card between 'hw:' and '/'"),
            ("hw:PCH", "names card 'PCH' but no control; write hw:PCH/Headphone Jack"),
            ("hw:PCH/", "names no control after 'hw:PCH/'"),
            ("hw:PCH/   ", "names no control after 'hw:PCH/'"),
            ("hw:32/Headphone Jack", "card index 32 is out of range"),
            ("hw:P C H/Headphone Jack", "'P C H' is neither a card index"),
            ("hw:ThisIdIsFarTooLong/Headphone Jack", "is neither a card index"),
            ("Headphone", "'Headphone' is not a jack-sense control"),
            ("hw:PCH/Master Playback Switch", "is not a jack-sense control"),
            ("Headphone Jack Switch", "is not a jack-sense control"),
        ])
    func rejectsSense(_ text: String, _ reason: String) {
        #expect {
            try DeviceBindings.parseSense(text)
        } throws: { error in
            guard let error = error as? DeviceBindingError else { return false }
            return error.key == "sense" && error.text == text && error.reason.contains(reason)
                && error.description.hasPrefix("sense '\(text)': ")
        }
    }

    @Test("mute switches must be capture switches")
    func muteSwitchParsing() throws {
        #expect(try DeviceBindings.parseMuteSwitch("Capture Switch") == SenseSelector(control: "Capture Switch"))
        #expect(
            try DeviceBindings.parseMuteSwitch("hw:1/Mic Capture Switch")
                == SenseSelector(card: .index(1), control: "Mic Capture Switch"))
        #expect(throws: DeviceBindingError.self) { try DeviceBindings.parseMuteSwitch("Master Playback Switch") }
        #expect(throws: DeviceBindingError.self) { try DeviceBindings.parseMuteSwitch("hw:/") }
        #expect(throws: DeviceBindingError.self) { try DeviceBindings.parseMuteSwitch("Headphone Jack") }
    }

    @Test("a bad declaration names its port; a port declared twice is an error")
    func declarationErrors() {
        do {
            _ = try DeviceBindings([D(port: "phones", sense: "Headphone Jack"), D(port: "mic", sense: "hw:/")])
            Issue.record("a bad sense value was accepted")
        } catch {
            #expect(error.port == "mic")
            #expect(error.description.hasPrefix("port 'mic': sense 'hw:/': names no card between"))
        }
        do {
            _ = try DeviceBindings([(port: "mic", sense: nil, muteSwitch: "Volume")])
            Issue.record("a bad mute switch was accepted")
        } catch {
            #expect(error.port == "mic" && error.key == "muteSwitch")
        }
        do {
            _ = try DeviceBindings([D(port: "phones", sense: "Headphone Jack"), D(port: "phones")])
            Issue.record("a duplicate port was accepted")
        } catch {
            #expect(error.description == "port 'phones': is declared twice; give each port one declaration")
        }
    }

    @Test("USB cards are recognised by driver or long name")
    func usbLabel() {
        #expect(card("Device", 1, driver: "USB-Audio").isUSB)
        #expect(card("X", 2, driver: "snd_x", longName: "Focusrite USB Audio at usb-0000:00:14.0-2").isUSB)
        #expect(!card("PCH", 0).isUSB)
    }
}
