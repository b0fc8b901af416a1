// What the ALSA side of the box reports: the cards present and the state of the controls
// recd watches. Plain values, so they cross threads and feed DeviceBindings in tests.

/// One sound card, as snd_ctl_card_info describes it.
public struct SoundCard: Hashable, Sendable, CustomStringConvertible {
    /// The card number: `hw:N`. Reused after a card goes away.
    public var index: Int
    /// The card id, e.g. `PCH` or `Device`: `hw:CARDID`. Unique among the cards present.
    public var id: String
    /// Short name, e.g. `HDA Intel PCH`.
    public var name: String
    /// Long name, e.g. `HDA Intel PCH at 0xf7f10000 irq 32`.
    public var longName: String
    /// Kernel driver, e.g. `HDA-Intel` or `USB-Audio`.
    public var driver: String

    public init(index: Int, id: String, name: String, longName: String, driver: String) {
        self.index = index
        self.id = id
        self.name = name
        self.longName = longName
        self.driver = driver
    }

    /// True for a USB audio device (driver `USB-Audio`, or `USB` in the long name), so its
    /// ports can be labelled usbAudio.
    public var isUSB: Bool { driver == "USB-Audio" || longName.contains("USB") }

    public var description: String { "hw:\(index) (\(id): \(name), driver \(driver))" }
}

/// A change on the ALSA side, or one line of its current state.
///
/// `card` is the card id (`SoundCard.id`). `control` is the ALSA element name, with
/// `,index=N` appended when the element's index is not 0 (two elements may share a name).
public enum DeviceEvent: Hashable, Sendable, CustomStringConvertible {
    /// A jack-sense control (a boolean whose name ends in " Jack"): true = something plugged.
    case jackSense(card: String, control: String, plugged: Bool)
    /// A capture switch (a boolean whose name contains "Capture Switch"): false = muted in
    /// hardware. For a stereo switch, on = any channel on.
    case captureSwitch(card: String, control: String, on: Bool)
    /// A card appeared (or was there at start); its controls' states follow.
    case cardAdded(SoundCard)
    /// A card went away; its controls no longer exist.
    case cardRemoved(card: String)

    public var description: String {
        switch self {
        case .jackSense(let card, let control, let plugged):
            "jack sense \(card)/\(control): \(plugged ? "plugged" : "unplugged")"
        case .captureSwitch(let card, let control, let on):
            "capture switch \(card)/\(control): \(on ? "on" : "off (muted)")"
        case .cardAdded(let card): "card added: \(card)"
        case .cardRemoved(let card): "card removed: \(card)"
        }
    }
}

/// One descriptor for poll(2), for a caller that polls `ControlMonitor` in its own loop.
public struct PollDescriptor: Hashable, Sendable {
    public var fd: Int32
    /// poll(2) event bits to ask for.
    public var events: Int16

    public init(fd: Int32, events: Int16) {
        self.fd = fd
        self.events = events
    }
}
