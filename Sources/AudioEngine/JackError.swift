/// A failed JACK call: the jack_status_t bits libjack reported (when the call reports them),
/// the call's return code (when it returns one), what recd was doing, and a message for a
/// person.
///
/// Environment failures (no server, the server went away, a name taken) are thrown as this;
/// the daemon maps them to SPEC §2 codes (`serverFailed`/`serverLost` →
/// mediaServicesFailed, the rest → unspecified with this message).
public struct JackError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bits of jack_status_t (jack/types.h), under Swift names.
    public struct Status: OptionSet, Hashable, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// JackFailure (0x01): overall operation failed.
        public static let failure = Status(rawValue: 0x01)
        /// JackInvalidOption (0x02): the operation contained an invalid or unsupported option.
        public static let invalidOption = Status(rawValue: 0x02)
        /// JackNameNotUnique (0x04): the desired client name was not unique.
        public static let nameNotUnique = Status(rawValue: 0x04)
        /// JackServerStarted (0x08): the server was started by this call (recd never asks).
        public static let serverStarted = Status(rawValue: 0x08)
        /// JackServerFailed (0x10): unable to connect to the JACK server.
        public static let serverFailed = Status(rawValue: 0x10)
        /// JackServerError (0x20): communication error with the JACK server.
        public static let serverError = Status(rawValue: 0x20)
        /// JackNoSuchClient (0x40): requested client does not exist.
        public static let noSuchClient = Status(rawValue: 0x40)
        /// JackLoadFailure (0x80): unable to load internal client.
        public static let loadFailure = Status(rawValue: 0x80)
        /// JackInitFailure (0x100): unable to initialize client.
        public static let initFailure = Status(rawValue: 0x100)
        /// JackShmFailure (0x200): unable to access shared memory.
        public static let sharedMemoryFailure = Status(rawValue: 0x200)
        /// JackVersionError (0x400): client's protocol version does not match.
        public static let versionError = Status(rawValue: 0x400)
        /// JackBackendError (0x800): a backend error.
        public static let backendError = Status(rawValue: 0x800)
        /// JackClientZombie (0x1000): the client was made a zombie (it stalled the graph).
        public static let clientZombie = Status(rawValue: 0x1000)

        static let names: [(Status, String)] = [
            (.failure, "failure"), (.invalidOption, "invalidOption"),
            (.nameNotUnique, "nameNotUnique"), (.serverStarted, "serverStarted"),
            (.serverFailed, "serverFailed"), (.serverError, "serverError"),
            (.noSuchClient, "noSuchClient"), (.loadFailure, "loadFailure"),
            (.initFailure, "initFailure"), (.sharedMemoryFailure, "sharedMemoryFailure"),
            (.versionError, "versionError"), (.backendError, "backendError"),
            (.clientZombie, "clientZombie"),
        ]
    }

    /// The status bits (empty for calls that report only a return code).
    public var status: Status
    /// The call's return code, e.g. jack_connect's; nil when it has none.
    public var code: Int32?
    /// What recd was doing, e.g. `connect system:capture_1 → recd:mic_1`.
    public var operation: String
    /// What went wrong and what to do about it.
    public var message: String

    public init(status: Status = [], code: Int32? = nil, operation: String, message: String) {
        self.status = status
        self.code = code
        self.operation = operation
        self.message = message
    }

    /// True when the server is not there (never was, or went away): a media-services failure.
    public var isServerUnavailable: Bool {
        !status.isDisjoint(with: [.serverFailed, .serverError, .sharedMemoryFailure])
    }

    public var description: String {
        var text = "\(operation): \(message)"
        let bits = Status.names.filter { status.contains($0.0) }.map(\.1)
        if !bits.isEmpty { text += " [jack status: \(bits.joined(separator: ", "))]" }
        if let code { text += " [code \(code)]" }
        return text
    }

    /// A client may not carry its server's name on jackd: libjack binds the client's
    /// notification socket at the path of the server's own socket (both are
    /// `jack_NAME_UID_0` in jackd's directory, /dev/shm), unlinking the server's first, and from
    /// then on no other client can connect to that server. So such a name is refused before
    /// jack_client_open is called.
    static func clientNamedLikeServer(_ name: String) -> JackError {
        JackError(
            status: .invalidOption, operation: "open client '\(name)'",
            message: "a JACK client named like its server ('\(name)') would replace the server's socket "
                + "and cut every other client off; choose another [jack] client_name")
    }

    /// The message for a failed jack_client_open, from its status bits.
    static func openFailure(status: Status, clientName: String, serverName: String?) -> JackError {
        let jack = JackImplementation.loaded
        let reached = jack.serverName(configured: serverName)
        let server = jack.kind == .pipewire ? "PipeWire '\(reached)'" : "JACK server '\(reached)'"
        let message: String
        if status.contains(.serverFailed) {
            message =
                jack.kind == .pipewire
                ? "could not connect to \(server) (PipeWire's JACK); start PipeWire (recd never starts one) and "
                    + "check PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR (where its socket is) and PIPEWIRE_REMOTE"
                : "could not connect to \(server); start jackd (recd never starts one) and check "
                    + "that it runs as the same user or is promiscuous"
        } else if status.contains(.serverError) {
            message = "\(server) did not answer properly; restart \(jack.kind == .pipewire ? "PipeWire" : "jackd")"
        } else if status.contains(.sharedMemoryFailure) {
            message = "cannot map \(server)'s shared memory; check /dev/shm and permissions"
        } else if status.contains(.versionError) {
            message = "libjack and \(server) speak different protocol versions; reinstall JACK"
        } else if status.contains(.nameNotUnique) {
            message = "a JACK client named '\(clientName)' already exists"
        } else if status.contains(.invalidOption) {
            message = "libjack rejected the open options"
        } else {
            message = "jack_client_open failed on \(server)"
        }
        return JackError(status: status, operation: "open client '\(clientName)'", message: message)
    }
}

/// Why an `AudioEngine` request failed.
public enum AudioEngineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A JACK call failed.
    case jack(JackError)
    /// The engine has not been started (or was stopped).
    case notRunning
    /// The JACK server went away; stop and reconnect the engine.
    case serverLost(reason: String)
    /// No port group of that name and direction was configured.
    case unknownGroup(String)
    /// A request the engine cannot carry out as asked, with the reason.
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .jack(let error): "\(error)"
        case .notRunning: "the audio engine is not running; start it first"
        case .serverLost(let reason): "the JACK server went away (\(reason)); wait for it to return"
        case .unknownGroup(let name): "no port group named '\(name)' is configured"
        case .invalidArgument(let reason): reason
        }
    }
}
