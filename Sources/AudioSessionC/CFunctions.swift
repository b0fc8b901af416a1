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

private func handle(_ pointer: OpaquePointer) -> CSession {
    Unmanaged<CSession>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
}
private func string(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
private func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int) -> [String] {
    guard let list else { return [] }
    return (0..<count).compactMap { list[$0].map { String(cString: $0) } }
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
    _ app: UnsafePointer<CChar>, _ socket: UnsafePointer<CChar>?, _ micUsage: UnsafePointer<CChar>?
) -> OpaquePointer {
    let session = AudioSession(
        app: String(cString: app), socketPath: string(socket), microphoneUsageDescription: string(micUsage))
    return OpaquePointer(Unmanaged.passRetained(CSession(session)).toOpaque())
}

@_cdecl("as_session_free")
public func as_session_free(_ pointer: OpaquePointer?) {
    guard let pointer else { return }
    let unmanaged = Unmanaged<CSession>.fromOpaque(UnsafeRawPointer(pointer))
    unmanaged.takeUnretainedValue().session.close()
    unmanaged.release()
}

@_cdecl("as_last_error_message")
public func as_last_error_message(_ pointer: OpaquePointer) -> UnsafePointer<CChar>? {
    handle(pointer).lastErrorMessage
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
    _ pointer: OpaquePointer, _ category: UnsafePointer<CChar>, _ mode: UnsafePointer<CChar>?, _ options: UInt64,
    _ policy: UnsafePointer<CChar>?
) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        let chosen = CategoryOption.allCases.filter { options & UInt64($0.upstreamValue) == UInt64($0.upstreamValue) }
        try c.session.setCategory(
            try Vocabulary.category(String(cString: category)), mode: try Vocabulary.mode(string(mode) ?? "default"),
            options: Set(chosen), policy: try Vocabulary.policy(string(policy) ?? "default"))
    }
}

@_cdecl("as_set_active")
public func as_set_active(_ pointer: OpaquePointer, _ active: Int32, _ options: UInt32) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        try c.session.setActive(active != 0, options: AudioSession.SetActiveOptions(rawValue: UInt(options)))
    }
}

@_cdecl("as_set_preferred_input")
public func as_set_preferred_input(_ pointer: OpaquePointer, _ port: UnsafePointer<CChar>?) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in try c.session.setPreferredInput(named: string(port)) }
}

@_cdecl("as_override_output_audio_port")
public func as_override_output_audio_port(_ pointer: OpaquePointer, _ speaker: Int32) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        try c.session.overrideOutputAudioPort(speaker != 0 ? .speaker : .none)
    }
}

@_cdecl("as_record_permission")
public func as_record_permission(_ pointer: OpaquePointer, _ out: UnsafeMutablePointer<Int32>) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in out.pointee = upstream(try c.session.recordPermission) }
}

@_cdecl("as_request_record_permission_wait")
public func as_request_record_permission_wait(_ pointer: OpaquePointer, _ out: UnsafeMutablePointer<Int32>) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        out.pointee = upstream(try c.session.requestRecordPermissionAndWait())
    }
}

@_cdecl("as_request_record_permission")
public func as_request_record_permission(
    _ pointer: OpaquePointer, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    guard let callback else { return ErrorCode.badParam.rawValue }
    let registered = Registered(function: callback, user: user)
    handle(pointer).session.requestRecordPermission { granted in registered.function(granted ? 1 : 0, registered.user) }
    return 0
}

@_cdecl("as_is_other_audio_playing")
public func as_is_other_audio_playing(_ pointer: OpaquePointer, _ out: UnsafeMutablePointer<Int32>) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in out.pointee = try c.session.isOtherAudioPlaying ? 1 : 0 }
}

@_cdecl("as_secondary_audio_should_be_silenced_hint")
public func as_secondary_audio_should_be_silenced_hint(_ pointer: OpaquePointer, _ out: UnsafeMutablePointer<Int32>)
    -> Int32
{
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        out.pointee = try c.session.secondaryAudioShouldBeSilencedHint ? 1 : 0
    }
}

@_cdecl("as_copy_current_route_json")
public func as_copy_current_route_json(_ pointer: OpaquePointer) -> UnsafeMutablePointer<CChar>? {
    let c = handle(pointer)
    var text: String?
    _ = c.status { () throws(AudioSessionError) in text = try c.session.currentRoute.json.jsonText }
    return text.flatMap { strdup($0) }
}

@_cdecl("as_copy_available_inputs_json")
public func as_copy_available_inputs_json(_ pointer: OpaquePointer) -> UnsafeMutablePointer<CChar>? {
    let c = handle(pointer)
    var text: String?
    _ = c.status { () throws(AudioSessionError) in
        text = JSONValue.array(try c.session.availableInputs.map(\.json)).jsonText
    }
    return text.flatMap { strdup($0) }
}

@_cdecl("as_free")
public func as_free(_ pointer: UnsafeMutableRawPointer?) { free(pointer) }

@_cdecl("as_attach")
public func as_attach(
    _ pointer: OpaquePointer, _ client: UnsafePointer<CChar>, _ play: UnsafePointer<UnsafePointer<CChar>?>?,
    _ playCount: Int,
    _ capture: UnsafePointer<UnsafePointer<CChar>?>?, _ captureCount: Int
) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in
        try c.session.attach(
            jackClient: String(cString: client), playPorts: strings(play, playCount),
            capturePorts: strings(capture, captureCount))
    }
}

@_cdecl("as_detach")
public func as_detach(_ pointer: OpaquePointer, _ client: UnsafePointer<CChar>) -> Int32 {
    let c = handle(pointer)
    return c.status { () throws(AudioSessionError) in try c.session.detach(jackClient: String(cString: client)) }
}

@_cdecl("as_set_interruption_callback")
public func as_set_interruption_callback(
    _ pointer: OpaquePointer, _ callback: InterruptionCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    handle(pointer).callbacks.withLock { $0.interruption = callback.map { Registered(function: $0, user: user) } }
    return 0
}

@_cdecl("as_set_route_change_callback")
public func as_set_route_change_callback(
    _ pointer: OpaquePointer, _ callback: RouteChangeCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    handle(pointer).callbacks.withLock { $0.routeChange = callback.map { Registered(function: $0, user: user) } }
    return 0
}

@_cdecl("as_set_media_services_callback")
public func as_set_media_services_callback(
    _ pointer: OpaquePointer, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    handle(pointer).callbacks.withLock { $0.mediaServices = callback.map { Registered(function: $0, user: user) } }
    return 0
}

@_cdecl("as_set_silence_secondary_audio_hint_callback")
public func as_set_silence_secondary_audio_hint_callback(
    _ pointer: OpaquePointer, _ callback: HintCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    handle(pointer).callbacks.withLock { $0.silenceHint = callback.map { Registered(function: $0, user: user) } }
    return 0
}

@_cdecl("as_set_input_mute_callback")
public func as_set_input_mute_callback(
    _ pointer: OpaquePointer, _ callback: FlagCallback?, _ user: UnsafeMutableRawPointer?
) -> Int32 {
    handle(pointer).callbacks.withLock { $0.inputMute = callback.map { Registered(function: $0, user: user) } }
    return 0
}
