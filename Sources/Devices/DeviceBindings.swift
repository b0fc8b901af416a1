// Policy for the ALSA side, kept pure: which port a control belongs to, and what a control
// change means for that port. No C and no I/O, so it is tested from tables.

/// Names one ALSA control, on one card or on any: the parsed form of a port's `sense` (or
/// mute switch) declaration.
///
/// Text forms: `Headphone Jack` (any card), `hw:PCH/Headphone Jack` (card id),
/// `hw:CARD=PCH/Headphone Jack` (the same, in alsa-lib's spelling), `hw:1/Headphone Jack`
/// (card index). A control whose element index is not 0 is written `Headphone Jack,index=1`.
public struct SenseSelector: Hashable, Sendable, CustomStringConvertible {
    /// Which card a selector means.
    public enum Card: Hashable, Sendable {
        /// The card with this id (`SoundCard.id`).
        case id(String)
        /// The card with this index (`SoundCard.index`), whichever card that is now.
        case index(Int)
    }

    /// nil: the control on whichever card has it (the first card seen, if several do).
    public var card: Card?
    /// The control's name as `DeviceEvent` carries it.
    public var control: String

    public init(card: Card? = nil, control: String) {
        self.card = card
        self.control = control
    }

    public var description: String {
        switch card {
        case nil: control
        case .id(let id): "hw:\(id)/\(control)"
        case .index(let index): "hw:\(index)/\(control)"
        }
    }
}

/// What a device event means for one port.
public enum PortSignal: Hashable, Sendable, CustomStringConvertible {
    /// The port's jack-sense control now says plugged (true) or unplugged (false): the port
    /// is available only while plugged and its JACK ports exist.
    case plugged(port: String, Bool)
    /// The port's jack-sense control is no longer known (its card went away): availability
    /// follows JACK alone again (`isPlugged(port:)` is nil).
    case senseLost(port: String)
    /// The port's capture switch went off (true: muted in hardware, SPEC §4 builtInMicMuted)
    /// or back on (false). A switch whose card went away counts as not muted.
    case hardwareMuted(port: String, Bool)

    public var description: String {
        switch self {
        case .plugged(let port, let plugged): "\(port): \(plugged ? "plugged" : "unplugged")"
        case .senseLost(let port): "\(port): jack sense unknown"
        case .hardwareMuted(let port, let muted): "\(port): \(muted ? "muted" : "unmuted") in hardware"
        }
    }
}

/// Which ALSA controls belong to which recd port, and the state they last reported.
///
/// Built from the ports' declarations (config `[port NAME] sense = ...`, and a capture switch
/// where one is bound); `apply` folds each `DeviceEvent` in and returns the `PortSignal`s for
/// ports whose state changed: a repeated value, or a control no port names, gives nothing.
/// Signals come in declaration order, sense before mute for each port.
///
/// A value type owned by the daemon's control thread; nothing here blocks or allocates
/// beyond its tables.
public struct DeviceBindings: Sendable {
    /// One port's device declarations, as written.
    public struct Declaration: Hashable, Sendable {
        public var port: String
        /// The jack-sense control (`[port] sense`), e.g. `Headphone Jack`; nil for none.
        public var sense: String?
        /// The capture switch that mutes this input in hardware, e.g. `Capture Switch`.
        public var muteSwitch: String?

        public init(port: String, sense: String? = nil, muteSwitch: String? = nil) {
            self.port = port
            self.sense = sense
            self.muteSwitch = muteSwitch
        }
    }

    private struct Binding: Sendable {
        var port: String
        var sense: SenseSelector?
        var muteSwitch: SenseSelector?
    }

    private struct ControlKey: Hashable, Sendable {
        var card: String
        var control: String
    }

    private struct KnownCard: Sendable {
        var id: String
        /// nil when the card was seen only through control events, never `cardAdded`.
        var index: Int?
    }

    private let bindings: [Binding]
    /// Cards present, in the order they were first seen (an any-card selector follows the
    /// first of them that has its control).
    private var cards: [KnownCard] = []
    private var jackStates: [ControlKey: Bool] = [:]
    private var switchStates: [ControlKey: Bool] = [:]
    /// What was last signalled per port (absent: unknown / not muted).
    private var plugged: [String: Bool] = [:]
    private var muted: [String: Bool] = [:]

    /// Parses every declaration; throws the first bad one, naming its port.
    public init(_ declarations: [Declaration]) throws(DeviceBindingError) {
        var bindings: [Binding] = []
        var seen: Set<String> = []
        for declaration in declarations {
            guard seen.insert(declaration.port).inserted else {
                throw DeviceBindingError(
                    port: declaration.port, key: "port", text: declaration.port,
                    reason: "is declared twice; give each port one declaration")
            }
            do throws(DeviceBindingError) {
                bindings.append(
                    Binding(
                        port: declaration.port,
                        sense: try declaration.sense.map { text throws(DeviceBindingError) in
                            try Self.parseSense(text)
                        },
                        muteSwitch: try declaration.muteSwitch.map { text throws(DeviceBindingError) in
                            try Self.parseMuteSwitch(text)
                        }))
            } catch {
                var error = error
                error.port = declaration.port
                throw error
            }
        }
        self.bindings = bindings
    }

    /// The same, from `(port, sense, muteSwitch)` triples.
    public init(_ declarations: [(port: String, sense: String?, muteSwitch: String?)]) throws(DeviceBindingError) {
        try self.init(declarations.map { Declaration(port: $0.port, sense: $0.sense, muteSwitch: $0.muteSwitch) })
    }

    /// The ports declared, in order.
    public var ports: [String] { bindings.map(\.port) }

    // MARK: Parsing

    /// Parses a `sense` value: a jack-sense control (its name ends in " Jack"), optionally on
    /// one card. Throws with what is wrong and how to write it.
    public static func parseSense(_ text: String) throws(DeviceBindingError) -> SenseSelector {
        let selector = try parseSelector(text, key: "sense", example: "Headphone Jack")
        guard baseName(selector.control).hasSuffix(" Jack") else {
            throw DeviceBindingError(
                key: "sense", text: text,
                reason: "'\(selector.control)' is not a jack-sense control: ALSA names them '... Jack' "
                    + "(e.g. Headphone Jack, Mic Jack); `amixer -c CARD controls | grep Jack` lists a card's")
        }
        return selector
    }

    /// Parses a mute-switch value: a capture switch (its name contains "Capture Switch"),
    /// optionally on one card.
    public static func parseMuteSwitch(_ text: String) throws(DeviceBindingError) -> SenseSelector {
        let selector = try parseSelector(text, key: "muteSwitch", example: "Capture Switch")
        guard baseName(selector.control).contains("Capture Switch") else {
            throw DeviceBindingError(
                key: "muteSwitch", text: text,
                reason: "'\(selector.control)' is not a capture switch: ALSA names them '... Capture Switch' "
                    + "(e.g. Capture Switch, Mic Capture Switch); `amixer -c CARD controls | grep 'Capture Switch'` "
                    + "lists a card's")
        }
        return selector
    }

    private static func parseSelector(_ text: String, key: String, example: String) throws(DeviceBindingError)
        -> SenseSelector
    {
        let trimmed = trim(text)
        let forms = "write \(example) (any card), hw:CARDID/\(example) or hw:N/\(example)"
        guard !trimmed.isEmpty else {
            throw DeviceBindingError(key: key, text: text, reason: "is empty; \(forms)")
        }
        guard trimmed.hasPrefix("hw:") else { return SenseSelector(control: trimmed) }
        let rest = trimmed.dropFirst(3)
        guard let slash = rest.firstIndex(of: "/") else {
            let reason =
                rest.isEmpty
                ? "names no card after 'hw:'; \(forms)"
                : "names card '\(rest)' but no control; write hw:\(rest)/\(example)"
            throw DeviceBindingError(key: key, text: text, reason: reason)
        }
        var cardText = trim(String(rest[..<slash]))
        let control = trim(String(rest[rest.index(after: slash)...]))
        if cardText.hasPrefix("CARD=") { cardText = String(cardText.dropFirst(5)) }
        guard !cardText.isEmpty else {
            throw DeviceBindingError(
                key: key, text: text,
                reason: "names no card between 'hw:' and '/'; \(forms) (ids and indexes are in /proc/asound/cards)")
        }
        let card: SenseSelector.Card
        if cardText.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard let index = Int(cardText), (0..<32).contains(index) else {
                throw DeviceBindingError(
                    key: key, text: text, reason: "card index \(cardText) is out of range; ALSA numbers cards 0 to 31")
            }
            card = .index(index)
        } else {
            let valid =
                cardText.count <= 15 && !(cardText.first!.isNumber)
                && cardText.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
            guard valid else {
                throw DeviceBindingError(
                    key: key, text: text,
                    reason: "'\(cardText)' is neither a card index (0 to 31) nor a card id (up to 15 letters, "
                        + "digits and _, as in /proc/asound/cards)")
            }
            card = .id(cardText)
        }
        guard !control.isEmpty else {
            throw DeviceBindingError(
                key: key, text: text,
                reason: "names no control after 'hw:\(cardText)/'; write hw:\(cardText)/\(example)")
        }
        return SenseSelector(card: card, control: control)
    }

    /// The control name without a `,index=N` suffix.
    private static func baseName(_ control: String) -> String {
        guard let comma = control.lastIndex(of: ",") else { return control }
        let suffix = control[comma...]
        let digits = suffix.dropFirst(",index=".count)
        guard suffix.hasPrefix(",index="), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return control
        }
        return String(control[..<comma])
    }

    private static func trim(_ text: String) -> String {
        String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }

    // MARK: State

    /// Folds `event` in; returns the signals for ports whose state changed.
    public mutating func apply(_ event: DeviceEvent) -> [PortSignal] {
        switch event {
        case .jackSense(let card, let control, let plugged):
            noteCard(id: card)
            jackStates[ControlKey(card: card, control: control)] = plugged
        case .captureSwitch(let card, let control, let on):
            noteCard(id: card)
            switchStates[ControlKey(card: card, control: control)] = on
        case .cardAdded(let card):
            // Two present cards never share an index: one holding it already is gone.
            for stale in cards where stale.index == card.index && stale.id != card.id {
                forget(card: stale.id)
            }
            noteCard(id: card.id, index: card.index)
        case .cardRemoved(let card):
            forget(card: card)
        }
        return signals()
    }

    /// Folds several events in, in order; returns all their signals.
    public mutating func apply(_ events: [DeviceEvent]) -> [PortSignal] {
        events.flatMap { apply($0) }
    }

    /// Whether `port`'s jack-sense control says plugged; nil when it has none bound, or its
    /// control is not known (no such card present, or not reported yet): then availability
    /// follows JACK alone.
    public func isPlugged(port: String) -> Bool? {
        guard let binding = bindings.first(where: { $0.port == port }), let sense = binding.sense else { return nil }
        return resolve(sense, in: jackStates)
    }

    /// Whether `port`'s capture switch is off. False with no switch bound or none known.
    public func isHardwareMuted(port: String) -> Bool {
        guard let binding = bindings.first(where: { $0.port == port }), let muteSwitch = binding.muteSwitch else {
            return false
        }
        return resolve(muteSwitch, in: switchStates) == false
    }

    private mutating func noteCard(id: String, index: Int? = nil) {
        if let position = cards.firstIndex(where: { $0.id == id }) {
            if let index { cards[position].index = index }
        } else {
            cards.append(KnownCard(id: id, index: index))
        }
    }

    private mutating func forget(card id: String) {
        cards.removeAll { $0.id == id }
        jackStates = jackStates.filter { $0.key.card != id }
        switchStates = switchStates.filter { $0.key.card != id }
    }

    private func resolve(_ selector: SenseSelector, in states: [ControlKey: Bool]) -> Bool? {
        switch selector.card {
        case nil:
            for card in cards {
                if let value = states[ControlKey(card: card.id, control: selector.control)] { return value }
            }
            return nil
        case .id(let id):
            return states[ControlKey(card: id, control: selector.control)]
        case .index(let index):
            guard let card = cards.first(where: { $0.index == index }) else { return nil }
            return states[ControlKey(card: card.id, control: selector.control)]
        }
    }

    /// Compares every port's resolved state with what was last signalled.
    private mutating func signals() -> [PortSignal] {
        var signals: [PortSignal] = []
        for binding in bindings {
            if let sense = binding.sense {
                let now = resolve(sense, in: jackStates)
                if now != plugged[binding.port] {
                    plugged[binding.port] = now
                    signals.append(now.map { .plugged(port: binding.port, $0) } ?? .senseLost(port: binding.port))
                }
            }
            if let muteSwitch = binding.muteSwitch {
                let now = resolve(muteSwitch, in: switchStates) == false
                if now != (muted[binding.port] ?? false) {
                    muted[binding.port] = now
                    signals.append(.hardwareMuted(port: binding.port, now))
                }
            }
        }
        return signals
    }
}
