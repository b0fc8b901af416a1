// libFuzzer target: bytes → a sequence of libaudiosession calls (Sources/AudioSessionC) with
// the arguments a careless or hostile C caller passes: NULL, live and freed session handles,
// NULL and random strings (bad UTF-8, no vocabulary word), NULL and random result pointers,
// port lists with NULL entries and counts from -128 to 300 (the API allows 256). Every call
// must return a status (or NULL) and never crash, hang or leak. No recd listens on the socket:
// calls with good arguments fail with mediaServicesFailed, which is the point — the argument
// checks run before anything is sent.
import AudioSessionC
import Glibc

/// The two sessions the whole run shares (a new session waits up to a second for recd).
nonisolated(unsafe) private var live: OpaquePointer?
nonisolated(unsafe) private var freed: OpaquePointer?
/// Where results go when the input passes a result pointer.
nonisolated(unsafe) private let resultSlot = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

private struct Bytes {
    var data: UnsafeBufferPointer<UInt8>
    var at = 0
    mutating func next() -> UInt8? {
        guard at < data.count else { return nil }
        defer { at += 1 }
        return data[at]
    }
}

private func onFlag(_ flag: Int32, _ user: UnsafeMutableRawPointer?) {}
private func onInterruption(_ type: UInt32, _ options: UInt32, _ reason: UInt32, _ user: UnsafeMutableRawPointer?) {}

/// A C string made of the next bytes (length byte first; 255: NULL), bad UTF-8 and all.
private func takeString(_ bytes: inout Bytes) -> [CChar]? {
    let length = Int(bytes.next() ?? 0)
    if length == 255 { return nil }
    var text: [CChar] = []
    for _ in 0..<length { text.append(CChar(bitPattern: bytes.next() ?? 0x61)) }
    text.append(0)
    return text
}

/// Calls `body` with `text` as a C string, or NULL.
private func withCString<R>(_ text: [CChar]?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withUnsafeBufferPointer { body($0.baseAddress) }
}

/// The one port name every list entry points to (never freed).
nonisolated(unsafe) private let portName = UnsafePointer(strdup("app:out_1")!)

/// A port list and the count to pass: entries (NULL at random) as many as the count, or a
/// NULL list (nil) with any count from -128 to 299. Never a list shorter than its count: that
/// would be the caller reading past its own array, which no library can check.
private func takePorts(_ bytes: inout Bytes) -> (entries: [UnsafePointer<CChar>?]?, count: Int) {
    let shape = bytes.next() ?? 0
    let count = Int(Int8(bitPattern: bytes.next() ?? 0)) + (shape & 1 == 0 ? 0 : 172)
    if shape & 2 != 0 || count <= 0 { return (nil, count) }
    var entries: [UnsafePointer<CChar>?] = []
    for _ in 0..<count { entries.append((bytes.next() ?? 1) % 5 == 0 ? nil : portName) }
    return (entries, count)
}

/// Calls `body` with a port list as C sees it.
private func withPorts<R>(
    _ list: (entries: [UnsafePointer<CChar>?]?, count: Int), _ body: (UnsafePointer<UnsafePointer<CChar>?>?, Int) -> R
) -> R {
    guard let entries = list.entries else { return body(nil, list.count) }
    return entries.withUnsafeBufferPointer { body($0.baseAddress, list.count) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    if live == nil {
        live = as_session_new("fuzz", "/nonexistent/recd-fuzz.sock", nil)
        freed = as_session_new("gone", "/nonexistent/recd-fuzz.sock", nil)
        as_session_free(freed)
    }
    var bytes = Bytes(data: UnsafeBufferPointer(start: data, count: size))
    // At most 64 calls an input: a long input is many calls, not a slow one.
    for _ in 0..<64 {
        guard let op = bytes.next(), let which = bytes.next() else { break }
        let session = [live, nil, freed][Int(which) % 3]
        let out: UnsafeMutablePointer<Int32>? = which & 4 == 0 ? resultSlot : nil
        switch op % 20 {
        case 0:
            let category = takeString(&bytes)
            let mode = takeString(&bytes)
            let options = UInt64(bytes.next() ?? 0) << 13
            withCString(category) { category in
                withCString(mode) { mode in _ = as_set_category(session, category, mode, options, nil) }
            }
        case 1: _ = as_set_active(session, Int32(which & 1), UInt32(bytes.next() ?? 0))
        case 2: withCString(takeString(&bytes)) { _ = as_set_preferred_input(session, $0) }
        case 3: _ = as_override_output_audio_port(session, Int32(which & 1))
        case 4: _ = as_record_permission(session, out)
        case 5: _ = as_request_record_permission_wait(session, out)
        case 6: _ = as_request_record_permission(session, which & 8 == 0 ? onFlag : nil, nil)
        case 7: _ = as_is_other_audio_playing(session, out)
        case 8: _ = as_secondary_audio_should_be_silenced_hint(session, out)
        case 9: as_free(as_copy_current_route_json(session))
        case 10: as_free(as_copy_available_inputs_json(session))
        case 11:
            let client = takeString(&bytes)
            let play = takePorts(&bytes)
            let capture = takePorts(&bytes)
            withCString(client) { client in
                withPorts(play) { play, playCount in
                    withPorts(capture) { capture, captureCount in
                        _ = as_attach(session, client, play, playCount, capture, captureCount)
                    }
                }
            }
        case 12: withCString(takeString(&bytes)) { _ = as_detach(session, $0) }
        case 13: _ = as_set_interruption_callback(session, which & 8 == 0 ? onInterruption : nil, nil)
        case 14: _ = as_set_media_services_callback(session, which & 8 == 0 ? onFlag : nil, nil)
        case 15: _ = as_set_input_mute_callback(session, which & 8 == 0 ? onFlag : nil, nil)
        case 16: _ = as_last_error_message(session).map { strlen($0) }
        case 17: _ = as_set_prefers_no_interruptions_from_system_alerts(session, Int32(Int8(bitPattern: bytes.next() ?? 0)))
        case 18: _ = as_prefers_no_interruptions_from_system_alerts(session, out)
        default: _ = as_error_name(Int32(bitPattern: UInt32(bytes.next() ?? 0) << 24 | UInt32(which)))
        }
    }
    return 0
}
