// The only file that touches libasound. One Swift method per C call, each returning Swift
// values or throwing ALSAError with the code captured right where the call failed.
// Everything above this file sees cards, element numbers, names and booleans, never a pointer.

internal import CALSA
import Glibc

/// The event-mask bits of a control event (alsa/control.h), read through the shim because
/// SND_CTL_EVENT_MASK_REMOVE (~0U) does not import.
enum ControlEventMask {
    static let remove = recd_ctl_event_mask_remove()
    static let value = recd_ctl_event_mask_value()
    static let info = recd_ctl_event_mask_info()
    static let add = recd_ctl_event_mask_add()
}

/// One element of a card's control list, as snd_ctl_elem_list reports it.
struct ControlElementID: Hashable {
    /// The element's number on its card; stable while the card exists.
    var numid: UInt32
    var name: String
    /// Distinguishes elements that share a name (0 for most).
    var index: UInt32
}

/// What snd_ctl_elem_info says about an element, reduced to what recd uses.
struct ControlElementInfo {
    var isBoolean: Bool
    var isReadable: Bool
    /// Number of values (channels) the element holds.
    var count: Int
}

/// One event read from a control handle (only element events: the others carry nothing recd
/// uses).
struct ControlEventRecord {
    var mask: UInt32
    var element: ControlElementID
}

/// The alsa-lib card index list, from snd_card_next. Missing /dev/snd gives an empty list.
func alsaCardIndexes() -> [Int] {
    var indexes: [Int] = []
    var card: Int32 = -1
    // snd_card_next fails only on a bad argument; stopping there is all that can be done.
    while snd_card_next(&card) == 0, card >= 0 {
        indexes.append(Int(card))
    }
    return indexes
}

/// Owns one open control interface (snd_ctl_t) and the scratch objects used to talk to it;
/// all are freed in `deinit`. Not thread-safe: it belongs to whichever thread owns the
/// `ControlMonitor` (or the `SoundCards.list()` call) that made it.
final class ControlHandle {
    private let handle: OpaquePointer
    private let value: OpaquePointer
    private let info: OpaquePointer
    private let event: OpaquePointer
    /// The ALSA name it was opened by, e.g. `hw:0`.
    let name: String

    /// snd_ctl_open on `hw:N`; nonblocking so reading events never waits.
    init(cardIndex: Int, nonblocking: Bool) throws(ALSAError) {
        name = "hw:\(cardIndex)"
        var opened: OpaquePointer?
        let result = snd_ctl_open(&opened, name, nonblocking ? recd_ctl_nonblock() : 0)
        guard result >= 0, let opened else {
            throw ALSAError(code: result, operation: "open the control interface of \(name)")
        }
        var value: OpaquePointer?
        var info: OpaquePointer?
        var event: OpaquePointer?
        // The *_malloc calls fail only when out of memory, which Swift traps on anyway.
        precondition(snd_ctl_elem_value_malloc(&value) == 0 && value != nil, "snd_ctl_elem_value_malloc failed")
        precondition(snd_ctl_elem_info_malloc(&info) == 0 && info != nil, "snd_ctl_elem_info_malloc failed")
        precondition(snd_ctl_event_malloc(&event) == 0 && event != nil, "snd_ctl_event_malloc failed")
        self.handle = opened
        self.value = value!
        self.info = info!
        self.event = event!
    }

    deinit {
        snd_ctl_event_free(event)
        snd_ctl_elem_info_free(info)
        snd_ctl_elem_value_free(value)
        snd_ctl_close(handle)
    }

    /// snd_ctl_card_info: the card's identity.
    func cardInfo() throws(ALSAError) -> SoundCard {
        var info: OpaquePointer?
        precondition(snd_ctl_card_info_malloc(&info) == 0 && info != nil, "snd_ctl_card_info_malloc failed")
        defer { snd_ctl_card_info_free(info) }
        let result = snd_ctl_card_info(handle, info)
        guard result >= 0 else { throw ALSAError(code: result, operation: "read the card info of \(name)") }
        return SoundCard(
            index: Int(snd_ctl_card_info_get_card(info)),
            id: Self.string(snd_ctl_card_info_get_id(info)),
            name: Self.string(snd_ctl_card_info_get_name(info)),
            longName: Self.string(snd_ctl_card_info_get_longname(info)),
            driver: Self.string(snd_ctl_card_info_get_driver(info)))
    }

    /// snd_ctl_subscribe_events: element changes arrive as events on the poll descriptors.
    func subscribeEvents() throws(ALSAError) {
        let result = snd_ctl_subscribe_events(handle, 1)
        guard result >= 0 else { throw ALSAError(code: result, operation: "subscribe to control events of \(name)") }
    }

    /// snd_ctl_elem_list, twice: once for the count, once for the entries.
    func elements() throws(ALSAError) -> [ControlElementID] {
        var list: OpaquePointer?
        precondition(snd_ctl_elem_list_malloc(&list) == 0 && list != nil, "snd_ctl_elem_list_malloc failed")
        defer { snd_ctl_elem_list_free(list) }
        var result = snd_ctl_elem_list(handle, list)
        guard result >= 0 else { throw ALSAError(code: result, operation: "list the controls of \(name)") }
        let count = snd_ctl_elem_list_get_count(list)
        guard count > 0 else { return [] }
        result = snd_ctl_elem_list_alloc_space(list, count)
        guard result >= 0 else { throw ALSAError(code: result, operation: "list the controls of \(name)") }
        defer { snd_ctl_elem_list_free_space(list) }
        result = snd_ctl_elem_list(handle, list)
        guard result >= 0 else { throw ALSAError(code: result, operation: "list the controls of \(name)") }
        // Controls may have been added between the two calls; `used` is what was filled.
        let used = snd_ctl_elem_list_get_used(list)
        return (0..<used).map { offset in
            ControlElementID(
                numid: snd_ctl_elem_list_get_numid(list, offset),
                name: Self.string(snd_ctl_elem_list_get_name(list, offset)),
                index: snd_ctl_elem_list_get_index(list, offset))
        }
    }

    /// snd_ctl_elem_info for element `numid`.
    func elementInfo(numid: UInt32) throws(ALSAError) -> ControlElementInfo {
        snd_ctl_elem_info_clear(info)
        snd_ctl_elem_info_set_numid(info, numid)
        let result = snd_ctl_elem_info(handle, info)
        guard result >= 0 else {
            throw ALSAError(code: result, operation: "read the info of control #\(numid) on \(name)")
        }
        return ControlElementInfo(
            isBoolean: snd_ctl_elem_info_get_type(info) == SND_CTL_ELEM_TYPE_BOOLEAN,
            isReadable: snd_ctl_elem_info_is_readable(info) != 0,
            count: Int(snd_ctl_elem_info_get_count(info)))
    }

    /// snd_ctl_elem_read of a boolean element: one value per channel.
    func readBooleans(numid: UInt32, count: Int) throws(ALSAError) -> [Bool] {
        snd_ctl_elem_value_clear(value)
        snd_ctl_elem_value_set_numid(value, numid)
        let result = snd_ctl_elem_read(handle, value)
        guard result >= 0 else {
            throw ALSAError(code: result, operation: "read control #\(numid) on \(name)")
        }
        return (0..<max(count, 1)).map { snd_ctl_elem_value_get_boolean(value, UInt32($0)) != 0 }
    }

    /// snd_ctl_read: the next pending element event, or nil when none is waiting.
    func readEvent() throws(ALSAError) -> ControlEventRecord? {
        while true {
            let result = snd_ctl_read(handle, event)
            if result == 0 || result == -EAGAIN { return nil }
            guard result > 0 else { throw ALSAError(code: result, operation: "read control events of \(name)") }
            // Only element events exist today; skip anything else a newer kernel might send.
            guard snd_ctl_event_get_type(event) == SND_CTL_EVENT_ELEM else { continue }
            return ControlEventRecord(
                mask: snd_ctl_event_elem_get_mask(event),
                element: ControlElementID(
                    numid: snd_ctl_event_elem_get_numid(event),
                    name: Self.string(snd_ctl_event_elem_get_name(event)),
                    index: snd_ctl_event_elem_get_index(event)))
        }
    }

    /// snd_ctl_poll_descriptors: what to poll(2) for this card's events.
    func pollDescriptors() -> [pollfd] {
        let count = snd_ctl_poll_descriptors_count(handle)
        guard count > 0 else { return [] }
        var descriptors = [pollfd](repeating: pollfd(), count: Int(count))
        let filled = descriptors.withUnsafeMutableBufferPointer {
            snd_ctl_poll_descriptors(handle, $0.baseAddress, UInt32(count))
        }
        return Array(descriptors.prefix(Int(max(filled, 0))))
    }

    /// snd_ctl_poll_descriptors_revents: what poll(2)'s answer means for this card.
    func revents(_ descriptors: [pollfd]) -> Int16 {
        var descriptors = descriptors
        var revents: UInt16 = 0
        let result = descriptors.withUnsafeMutableBufferPointer {
            snd_ctl_poll_descriptors_revents(handle, $0.baseAddress, UInt32($0.count), &revents)
        }
        // For hw control handles this only copies revents; a failure means "nothing usable".
        return result < 0 ? Int16(POLLERR) : Int16(bitPattern: revents)
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }
}

/// snd_strerror: libasound's text for one of its (negative errno or ALSA-specific) codes.
func alsaErrorText(_ code: Int32) -> String {
    guard let text = snd_strerror(code) else { return "error \(code)" }
    return String(cString: text)
}
