// libaudiosession.so: the C functions of include/audiosession.h over the AudioSession library.
// The handle is a retained CSession; its callbacks are called from the session's thread.
import AudioSession
import ControlProtocol
import Glibc
import SessionPolicy
import Synchronization

public typealias InterruptionCallback = @convention(c) (UInt32, UInt32, UInt32, UnsafeMutableRawPointer?) -> Void
public typealias RouteChangeCallback = @convention(c) (UInt32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void
public typealias FlagCallback = @convention(c) (Int32, UnsafeMutableRawPointer?) -> Void
public typealias HintCallback = @convention(c) (UInt32, UnsafeMutableRawPointer?) -> Void

/// A C callback and the caller's pointer; the pointer is the caller's business.
struct Registered<Function>: @unchecked Sendable {
    var function: Function
    var user: UnsafeMutableRawPointer?
}

struct Callbacks: Sendable {
    var interruption: Registered<InterruptionCallback>?
    var routeChange: Registered<RouteChangeCallback>?
    var mediaServices: Registered<FlagCallback>?
    var silenceHint: Registered<HintCallback>?
    var inputMute: Registered<FlagCallback>?
}

/// A malloc'd C string that one owner frees; the pointer moves between threads under a lock.
struct OwnedCString: @unchecked Sendable {
    var pointer: UnsafeMutablePointer<CChar>?
}

/// What an `as_session *` points to.
final class CSession: Sendable {
    let session: AudioSession
    let callbacks = Mutex(Callbacks())
    /// The last failure's message, as a C string owned here (freed when replaced).
    private let lastError = Mutex(OwnedCString(pointer: nil))

    init(_ session: AudioSession) {
        self.session = session
        session.addObserver { [weak self] notification in self?.deliver(notification) }
    }

    deinit { lastError.withLock { free($0.pointer) } }

    func status(_ body: () throws(AudioSessionError) -> Void) -> Int32 {
        do {
            try body()
            return 0
        } catch {
            let copy = OwnedCString(pointer: strdup(error.message))
            lastError.withLock { old in
                free(old.pointer)
                old = copy
            }
            return error.code.rawValue
        }
    }

    var lastErrorMessage: UnsafePointer<CChar>? { lastError.withLock { UnsafePointer($0.pointer) } }

    private func deliver(_ notification: AudioSessionNotification) {
        let current = callbacks.withLock { $0 }
        switch notification {
        case .interruption(let type, let options, let reason):
            if let c = current.interruption {
                c.function(UInt32(type.rawValue), UInt32(options.rawValue), UInt32(reason.rawValue), c.user)
            }
        case .routeChange(let reason, let previous):
            if let c = current.routeChange {
                previous.json.jsonText.withCString { c.function(UInt32(reason.rawValue), $0, c.user) }
            }
        case .mediaServicesWereLost: if let c = current.mediaServices { c.function(0, c.user) }
        case .mediaServicesWereReset: if let c = current.mediaServices { c.function(1, c.user) }
        case .silenceSecondaryAudioHint(let type):
            if let c = current.silenceHint { c.function(UInt32(type.rawValue), c.user) }
        case .inputMuteStateChange(let muted): if let c = current.inputMute { c.function(muted ? 1 : 0, c.user) }
        }
    }
}

// Every pointer the header takes is checked here before use: a NULL, a freed or a foreign
// session handle, a NULL where a string or an out-pointer is needed, a negative count or a
// NULL entry in a port list is AS_ERROR_BAD_PARAM with a message, never a crash. The handles
// handed out are kept in `liveSessions`: a handle that was freed (or never ours) is refused
// while no new session happens to reuse its address.

/// The handles `as_session_new` returned and `as_session_free` has not yet freed.
/// Kept as addresses (a raw pointer is not Sendable).
private let liveSessions = Mutex(Set<UInt>())
/// The message of the last refusal that had no live session to keep it (as_last_error_message(NULL)).
private let sessionlessError = Mutex(OwnedCString(pointer: strdup("no error")))

/// A refusal without a live session: its message kept for `as_last_error_message(NULL)`.
private func refused(_ message: String) -> Int32 {
    let copy = OwnedCString(pointer: strdup(message))
    sessionlessError.withLock { old in
        free(old.pointer)
        old = copy
    }
    return ErrorCode.badParam.rawValue
}

/// The live session behind `pointer`, retained for the call (a concurrent `as_session_free`
/// cannot release it under the caller), or nil.
private func handle(_ pointer: OpaquePointer?) -> CSession? {
    guard let pointer else { return nil }
    let address = UInt(bitPattern: UnsafeMutableRawPointer(pointer))
    return liveSessions.withLock { live -> CSession? in
        guard live.contains(address), let raw = UnsafeMutableRawPointer(bitPattern: address) else { return nil }
        return Unmanaged<CSession>.fromOpaque(raw).takeUnretainedValue()
    }
}

private let notASession =
    "the session handle is NULL or was freed; make one with as_session_new and use it until as_session_free"

/// Runs `body` on the live session behind `pointer`; a NULL or freed handle is badParam.
private func call(_ pointer: OpaquePointer?, _ body: (CSession) throws(AudioSessionError) -> Void) -> Int32 {
    guard let c = handle(pointer) else { return refused(notASession) }
    return c.status { () throws(AudioSessionError) in try body(c) }
}

/// A required C string argument, or badParam naming it.
private func required(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(AudioSessionError) -> String {
    guard let pointer else { throw SessionError(.badParam, "\(name) is NULL; pass a NUL-terminated string") }
    return String(cString: pointer)
}

/// A required out-pointer, or badParam naming it.
private func required<T>(_ pointer: UnsafeMutablePointer<T>?, _ name: String) throws(AudioSessionError)
    -> UnsafeMutablePointer<T>
{
    guard let pointer else { throw SessionError(.badParam, "\(name) is NULL; pass where the result goes") }
    return pointer
}

private func string(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

/// The most ports one list may name: more is a caller's mistake, not a JACK client.
let maximumPortList = 256

/// A port list: `count` entries, none NULL; NULL list only with count 0.
private func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ name: String)
    throws(AudioSessionError) -> [String]
{
    guard (0...maximumPortList).contains(count) else {
        throw SessionError(.badParam, "\(name) count \(count) is not 0...\(maximumPortList)")
    }
    guard count > 0 else { return [] }
    guard let list else { throw SessionError(.badParam, "\(name) is NULL but its count is \(count)") }
    var names: [String] = []
    for index in 0..<count {
        guard let entry = list[index] else {
            throw SessionError(.badParam, "\(name)[\(index)] is NULL; name each port as CLIENT:PORT")
        }
        names.append(String(cString: entry))
    }
    return names
}

/// The upstream values AS_RECORD_PERMISSION_* ('undt', 'deny', 'grnt').
private func upstream(_ permission: RecordPermission) -> Int32 {
    switch permission {
    case .undetermined: 1_970_168_948
    case .denied: 1_684_369_017
    case .granted: 1_735_552_628
    }
}

@_cdecl("as_session_new")
public func as_session_new(
    _ app: UnsafePointer<CChar>?, _ socket: UnsafePointer<CChar>?, _ micUsage: UnsafePointer<CChar>?
) -> OpaquePointer? {
    guard let name = string(app), !name.isEmpty else {
        _ = refused("app is NULL or empty; pass the application id, the session's name in recd")
        return nil
    }
    let session = AudioSession(app: name, socketPath: string(socket), microphoneUsageDescription: string(micUsage))
    let raw = Unmanaged.passRetained(CSession(session)).toOpaque()
    let address = UInt(bitPattern: raw)
    liveSessions.withLock { _ = $0.insert(address) }
    return OpaquePointer(raw)
}

@_cdecl("as_session_free")
public func as_session_free(_ pointer: OpaquePointer?) {
    guard let pointer else { return }
    let raw = UnsafeMutableRawPointer(pointer)
    // A second free of the same handle finds it gone and does nothing.
    let address = UInt(bitPattern: raw)
    guard liveSessions.withLock({ $0.remove(address) }) != nil else { return }
    let unmanaged = Unmanaged<CSession>.fromOpaque(raw)
    unmanaged.takeUnretainedValue().session.close()
    unmanaged.release()
}

@_cdecl("as_last_error_message")
public func as_last_error_message(_ pointer: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let c = handle(pointer) else { return sessionlessError.withLock { UnsafePointer($0.pointer) } }
    return c.lastErrorMessage
}

/// The names as C strings, made once and never freed nor written: safe to share.
nonisolated(unsafe) private let errorNames: [Int32: UnsafePointer<CChar>] = {
    var names: [Int32: UnsafePointer<CChar>] = [0: UnsafePointer(strdup("ok")!), 1: UnsafePointer(strdup("unknown")!)]
    for code in ErrorCode.allCases { names[code.rawValue] = UnsafePointer(strdup(code.name)!) }
    return names
}()

@_cdecl("as_error_name")
public func as_error_name(_ code: Int32) -> UnsafePointer<CChar> { errorNames[code] ?? errorNames[1]! }

@_cdecl("as_set_category")
public func as_set_category(
    _ pointer: OpaquePointer?, _ category: UnsafePointer<CChar>?, _ mode: UnsafePointer<CChar>?, _ options: UInt64,
    _ policy: UnsafePointer<CChar>?
) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        let chosen = CategoryOption.allCases.filter { options & UInt64($0.upstreamValue) == UInt64($0.upstreamValue) }
        try c.session.setCategory(
            try Vocabulary.category(try required(category, "category")),
            mode: try Vocabulary.mode(string(mode) ?? "default"), options: Set(chosen),
            policy: try Vocabulary.policy(string(policy) ?? "default"))
    }
}

@_cdecl("as_set_active")
public func as_set_active(_ pointer: OpaquePointer?, _ active: Int32, _ options: UInt32) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        try c.session.setActive(active != 0, options: AudioSession.SetActiveOptions(rawValue: UInt(options)))
    }
}

@_cdecl("as_set_preferred_input")
public func as_set_preferred_input(_ pointer: OpaquePointer?, _ port: UnsafePointer<CChar>?) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in try c.session.setPreferredInput(named: string(port)) }
}

@_cdecl("as_set_prefers_no_interruptions_from_system_alerts")
public func as_set_prefers_no_interruptions_from_system_alerts(_ pointer: OpaquePointer?, _ prefers: Int32) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        // A flag, not a count: anything but 0 or 1 is a caller's mistake (an uninitialised int).
        guard prefers == 0 || prefers == 1 else {
            throw SessionError(.badParam, "prefers is \(prefers); pass 1 (alerts do not interrupt) or 0")
        }
        try c.session.setPrefersNoInterruptionsFromSystemAlerts(prefers == 1)
    }
}

@_cdecl("as_prefers_no_interruptions_from_system_alerts")
public func as_prefers_no_interruptions_from_system_alerts(
    _ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?
) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "prefers")
        out.pointee = try c.session.prefersNoInterruptionsFromSystemAlerts ? 1 : 0
    }
}

@_cdecl("as_set_prefers_echo_cancelled_input")
public func as_set_prefers_echo_cancelled_input(_ pointer: OpaquePointer?, _ prefers: Int32) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        // A flag, not a count: anything but 0 or 1 is a caller's mistake (an uninitialised int).
        guard prefers == 0 || prefers == 1 else {
            throw SessionError(.badParam, "prefers is \(prefers); pass 1 (echo-cancelled input) or 0")
        }
        try c.session.setPrefersEchoCancelledInput(prefers == 1)
    }
}

@_cdecl("as_prefers_echo_cancelled_input")
public func as_prefers_echo_cancelled_input(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "prefers")
        out.pointee = try c.session.prefersEchoCancelledInput ? 1 : 0
    }
}

@_cdecl("as_is_echo_cancelled_input_available")
public func as_is_echo_cancelled_input_available(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?)
    -> Int32
{
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "available")
        out.pointee = try c.session.isEchoCancelledInputAvailable ? 1 : 0
    }
}

@_cdecl("as_override_output_audio_port")
public func as_override_output_audio_port(_ pointer: OpaquePointer?, _ speaker: Int32) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        try c.session.overrideOutputAudioPort(speaker != 0 ? .speaker : .none)
    }
}

@_cdecl("as_record_permission")
public func as_record_permission(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "permission")
        out.pointee = upstream(try c.session.recordPermission)
    }
}

@_cdecl("as_request_record_permission_wait")
public func as_request_record_permission_wait(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32
{
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "permission")
        out.pointee = upstream(try c.session.requestRecordPermissionAndWait())
    }
}

@_cdecl("as_request_record_permission")
public func as_request_record_permission(
    _ pointer: OpaquePointer?, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        guard let callback else {
            throw SessionError(.badParam, "callback is NULL; pass a function to hear the decision")
        }
        let registered = Registered(function: callback, user: user)
        c.session.requestRecordPermission { granted in registered.function(granted ? 1 : 0, registered.user) }
    }
}

@_cdecl("as_is_other_audio_playing")
public func as_is_other_audio_playing(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "playing")
        out.pointee = try c.session.isOtherAudioPlaying ? 1 : 0
    }
}

@_cdecl("as_secondary_audio_should_be_silenced_hint")
public func as_secondary_audio_should_be_silenced_hint(_ pointer: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?)
    -> Int32
{
    call(pointer) { c throws(AudioSessionError) in
        let out = try required(out, "hint")
        out.pointee = try c.session.secondaryAudioShouldBeSilencedHint ? 1 : 0
    }
}

/// A JSON text the caller frees with as_free; NULL on failure (as_last_error_message says why).
private func copyJSON(_ pointer: OpaquePointer?, _ body: (CSession) throws(AudioSessionError) -> JSONValue)
    -> UnsafeMutablePointer<CChar>?
{
    var text: String?
    _ = call(pointer) { c throws(AudioSessionError) in text = try body(c).jsonText }
    return text.flatMap { strdup($0) }
}

@_cdecl("as_copy_current_route_json")
public func as_copy_current_route_json(_ pointer: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    copyJSON(pointer) { c throws(AudioSessionError) in try c.session.currentRoute.json }
}

@_cdecl("as_copy_available_inputs_json")
public func as_copy_available_inputs_json(_ pointer: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    copyJSON(pointer) { c throws(AudioSessionError) in JSONValue.array(try c.session.availableInputs.map(\.json)) }
}

@_cdecl("as_free")
public func as_free(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

@_cdecl("as_attach")
public func as_attach(
    _ pointer: OpaquePointer?, _ client: UnsafePointer<CChar>?, _ play: UnsafePointer<UnsafePointer<CChar>?>?,
    _ playCount: Int,
    _ capture: UnsafePointer<UnsafePointer<CChar>?>?, _ captureCount: Int
) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in
        try c.session.attach(
            jackClient: try required(client, "client"), playPorts: try strings(play, playCount, "play_ports"),
            capturePorts: try strings(capture, captureCount, "capture_ports"))
    }
}

@_cdecl("as_detach")
public func as_detach(_ pointer: OpaquePointer?, _ client: UnsafePointer<CChar>?) -> Int32 {
    call(pointer) { c throws(AudioSessionError) in try c.session.detach(jackClient: try required(client, "client")) }
}

/// Sets (or with a NULL callback clears) one of the session's callbacks.
private func register(_ pointer: OpaquePointer?, _ change: (inout Callbacks) -> Void) -> Int32 {
    call(pointer) { c in c.callbacks.withLock { change(&$0) } }
}

@_cdecl("as_set_interruption_callback")
public func as_set_interruption_callback(
    _ pointer: OpaquePointer?, _ callback: InterruptionCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    register(pointer) { $0.interruption = callback.map { Registered(function: $0, user: user) } }
}

@_cdecl("as_set_route_change_callback")
public func as_set_route_change_callback(
    _ pointer: OpaquePointer?, _ callback: RouteChangeCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    register(pointer) { $0.routeChange = callback.map { Registered(function: $0, user: user) } }
}

@_cdecl("as_set_media_services_callback")
public func as_set_media_services_callback(
    _ pointer: OpaquePointer?, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    register(pointer) { $0.mediaServices = callback.map { Registered(function: $0, user: user) } }
}

@_cdecl("as_set_silence_secondary_audio_hint_callback")
public func as_set_silence_secondary_audio_hint_callback(
    _ pointer: OpaquePointer?, _ callback: HintCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    register(pointer) { $0.silenceHint = callback.map { Registered(function: $0, user: user) } }
}

@_cdecl("as_set_input_mute_callback")
public func as_set_input_mute_callback(
    _ pointer: OpaquePointer?, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    register(pointer) { $0.inputMute = callback.map { Registered(function: $0, user: user) } }
}
