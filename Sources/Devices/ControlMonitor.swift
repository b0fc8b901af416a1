// Watching the control interfaces of every card: jack-sense and capture-switch elements.
// Mechanism only: it says what the hardware reports; DeviceBindings decides what that means
// for recd's ports.

import Glibc

/// Watches every sound card's control interface for jack-sense and capture-switch changes,
/// and for cards coming and going.
///
/// It does not run a thread: its owner polls `pollDescriptors()` and calls `process(revents:)`
/// when they are ready, and calls `rescan()` now and then (cards appear without any descriptor
/// becoming ready). `ALSAEventSource` is such an owner, with its own thread; the daemon could
/// instead poll the descriptors in its control loop.
///
/// Watched elements are booleans whose name ends in " Jack" (value 1 = plugged) and booleans
/// whose name contains "Capture Switch" (value 0 = muted).
///
/// Threads: not thread-safe. Every method belongs to one thread at a time (the owner's). It
/// owns one `snd_ctl_t` per card, nonblocking and subscribed to events; they are closed by
/// `close()`, by `rescan()`/`process` when the card goes, or in `deinit`.
public final class ControlMonitor {
    private var cards: [Int: WatchedCard] = [:]

    public init() {}

    /// Opens the control interface of every card present and reads the state of its watched
    /// controls. Returns that state: for each card (by index), `cardAdded` then its controls'
    /// states. No cards: an empty list.
    ///
    /// Throws (and leaves nothing open) when a card exists but cannot be watched, typically
    /// permissions on /dev/snd.
    public func start() throws(ALSAError) -> [DeviceEvent] {
        close()
        for index in alsaCardIndexes() {
            do throws(ALSAError) {
                cards[index] = try WatchedCard(index: index)
            } catch {
                close()
                throw error
            }
        }
        return currentState()
    }

    /// The cards being watched, by index.
    public var watchedCards: [SoundCard] {
        cards.keys.sorted().map { cards[$0]!.card }
    }

    /// The state of everything watched: for each card, `cardAdded` then its controls.
    public func currentState() -> [DeviceEvent] {
        cards.keys.sorted().flatMap { cards[$0]!.state() }
    }

    /// The descriptors to poll(2) for control events. They change when cards come and go:
    /// ask again after every `process` and `rescan`.
    public func pollDescriptors() -> [PollDescriptor] {
        cards.keys.sorted().flatMap { index in
            cards[index]!.handle.pollDescriptors().map { PollDescriptor(fd: $0.fd, events: $0.events) }
        }
    }

    /// Reads the events of the cards whose descriptors poll(2) reported ready (`revents`, by
    /// fd; descriptors not listed count as not ready) and returns what changed. A card whose
    /// descriptor reports an error or hang-up, or whose reads fail, is closed and reported
    /// removed.
    public func process(revents: [Int32: Int16]) -> [DeviceEvent] {
        var events: [DeviceEvent] = []
        for index in cards.keys.sorted() {
            let card = cards[index]!
            var descriptors = card.handle.pollDescriptors()
            var any = false
            for offset in descriptors.indices {
                descriptors[offset].revents = revents[descriptors[offset].fd] ?? 0
                any = any || descriptors[offset].revents != 0
            }
            guard any else { continue }
            let ready = card.handle.revents(descriptors)
            if ready & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                events += remove(index)
                continue
            }
            guard ready & Int16(POLLIN) != 0 else { continue }
            do throws(ALSAError) {
                events += try card.drainEvents()
            } catch {
                // A failed read means the card is gone or broken; either way, stop watching it.
                // If it is still there, the next rescan opens it afresh.
                events += remove(index)
            }
        }
        return events
    }

    /// Compares the cards present with those watched: opens new ones (reporting `cardAdded`
    /// and their state), closes vanished ones (`cardRemoved`). A new card that cannot be
    /// opened is skipped and tried again on the next rescan.
    public func rescan() -> [DeviceEvent] {
        let present = Set(alsaCardIndexes())
        var events: [DeviceEvent] = []
        for index in cards.keys.sorted() where !present.contains(index) {
            events += remove(index)
        }
        for index in present.sorted() where cards[index] == nil {
            guard let card = try? WatchedCard(index: index) else { continue }
            cards[index] = card
            events += card.state()
        }
        return events
    }

    /// Closes every card's control interface. Safe to call more than once.
    public func close() {
        cards.removeAll()
    }

    private func remove(_ index: Int) -> [DeviceEvent] {
        guard let card = cards.removeValue(forKey: index) else { return [] }
        return [.cardRemoved(card: card.card.id)]
    }
}

/// One card's open control interface and the watched elements' last known values, by numid.
private final class WatchedCard {
    enum Kind {
        case jackSense
        case captureSwitch

        /// The kind an element's name suggests; nil when recd does not watch it.
        init?(name: String) {
            if name.hasSuffix(" Jack") {
                self = .jackSense
            } else if name.contains("Capture Switch") {
                self = .captureSwitch
            } else {
                return nil
            }
        }
    }

    struct Element {
        var kind: Kind
        /// The name events carry: the element name, with `,index=N` when N is not 0.
        var control: String
        var count: Int
        var value: Bool
    }

    let card: SoundCard
    let handle: ControlHandle
    private var elements: [UInt32: Element] = [:]

    /// Opens, subscribes, then reads: a change between the read and the first event cannot be
    /// lost, only seen twice (and a repeated value is not reported).
    init(index: Int) throws(ALSAError) {
        handle = try ControlHandle(cardIndex: index, nonblocking: true)
        card = try handle.cardInfo()
        try handle.subscribeEvents()
        for element in try handle.elements() {
            _ = try watch(element)
        }
    }

    /// `cardAdded`, then each watched control's value, in element-number order.
    func state() -> [DeviceEvent] {
        [.cardAdded(card)] + elements.keys.sorted().map { event(elements[$0]!) }
    }

    /// Reads every pending event; returns the watched values that changed.
    func drainEvents() throws(ALSAError) -> [DeviceEvent] {
        var events: [DeviceEvent] = []
        while let record = try handle.readEvent() {
            let numid = record.element.numid
            if record.mask == ControlEventMask.remove {
                elements[numid] = nil
            } else if elements[numid] == nil {
                if record.mask & ControlEventMask.add != 0, let element = try watch(record.element) {
                    events.append(event(element))
                }
            } else if record.mask & (ControlEventMask.value | ControlEventMask.info) != 0 {
                if let changed = try reread(numid) { events.append(changed) }
            }
        }
        return events
    }

    /// Starts watching `element` if it is a readable boolean of a watched kind; returns it.
    /// An element that cannot be read is skipped (one odd control must not hide the rest);
    /// only a vanished card is an error.
    private func watch(_ element: ControlElementID) throws(ALSAError) -> Element? {
        guard let kind = Kind(name: element.name) else { return nil }
        let info: ControlElementInfo
        let values: [Bool]
        do throws(ALSAError) {
            info = try handle.elementInfo(numid: element.numid)
            guard info.isBoolean, info.isReadable else { return nil }
            values = try handle.readBooleans(numid: element.numid, count: info.count)
        } catch {
            if error.isDeviceGone { throw error }
            return nil
        }
        let control = element.index == 0 ? element.name : "\(element.name),index=\(element.index)"
        let watched = Element(kind: kind, control: control, count: info.count, value: Self.reduce(values, kind))
        elements[element.numid] = watched
        return watched
    }

    /// Reads a watched element again; returns its event when the value changed.
    private func reread(_ numid: UInt32) throws(ALSAError) -> DeviceEvent? {
        guard var element = elements[numid] else { return nil }
        let value = Self.reduce(try handle.readBooleans(numid: numid, count: element.count), element.kind)
        guard value != element.value else { return nil }
        element.value = value
        elements[numid] = element
        return event(element)
    }

    /// Jack sense reads its first value; a capture switch is on when any channel is on (a
    /// stereo mic is muted only when both channels are).
    private static func reduce(_ values: [Bool], _ kind: Kind) -> Bool {
        switch kind {
        case .jackSense: values.first ?? false
        case .captureSwitch: values.contains(true)
        }
    }

    private func event(_ element: Element) -> DeviceEvent {
        switch element.kind {
        case .jackSense: .jackSense(card: card.id, control: element.control, plugged: element.value)
        case .captureSwitch: .captureSwitch(card: card.id, control: element.control, on: element.value)
        }
    }
}
