// The daemon's configuration as values (SPEC §12 "Config"). ConfigLoader builds these from an
// INI file or from the embedded default; the daemon owns the result and never mutates the file.

public import SessionPolicy

/// A config file that cannot be used: where it went wrong and what to do about it.
///
/// `line` is 1-based; it is 0 when the problem is not tied to one line (the file cannot be
/// read, say). `message` names the section, the key, the bad value and the accepted values.
public struct ConfigError: Error, Equatable, CustomStringConvertible {
    /// The config's source: the path it was loaded from, or `"<embedded default>"`.
    public var file: String
    /// 1-based line number, or 0 when the error is about the whole file.
    public var line: Int
    /// What was wrong and what to write instead.
    public var message: String

    public init(file: String, line: Int, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `FILE:LINE: MESSAGE`, the form editors and compilers use; `FILE: MESSAGE` when `line` is 0.
    public var description: String {
        line > 0 ? "\(file):\(line): \(message)" : "\(file): \(message)"
    }
}

/// Everything recd reads from its config file, with every default filled in.
public struct RecdConfig: Sendable, Equatable {
    public var daemon: DaemonSection
    public var jack: JackSection
    public var archive: ArchiveSection
    public var policy: PolicySection
    /// `[port NAME]` sections, in file order.
    public var ports: [PortDecl]
    /// `[session APP]` sections, in file order.
    public var sessions: [SessionDecl]
    /// The path the config was loaded from, or `"<embedded default>"`.
    public var source: String
    /// `[replicate]`: off-box copies of finished segments (off without a remote).
    public var replicate = ReplicateSection()
    /// `[voice]`: how voiceChat's and videoChat's processing treats the echo.
    public var voice = VoiceSection()
    /// `[evidence]`: RFC 3161 time-stamps of the chains (off without a TSA).
    public var evidence = EvidenceSection()
    /// `[http]`.
    public var http = HTTPSection()

    public init(
        daemon: DaemonSection, jack: JackSection = JackSection(), archive: ArchiveSection,
        policy: PolicySection = PolicySection(), ports: [PortDecl] = [],
        sessions: [SessionDecl] = [], source: String
    ) {
        self.daemon = daemon
        self.jack = jack
        self.archive = archive
        self.policy = policy
        self.ports = ports
        self.sessions = sessions
        self.source = source
    }

    /// The port declared as `[port NAME]`, if any.
    public func port(named name: String) -> PortDecl? {
        ports.first { $0.name == name }
    }

    /// The session declared as `[session APP]`, if any.
    public func session(named app: String) -> SessionDecl? {
        sessions.first { $0.app == app }
    }
}

/// `[daemon]`: where recd listens and keeps its state, and who administers it.
public struct DaemonSection: Sendable, Equatable {
    /// Absolute path of the control socket (`socket`).
    public var socket: String
    /// Absolute path of the directory for persisted sessions and permissions (`state_dir`).
    public var stateDir: String
    /// Unix group whose members may administer recd besides root (`admin_group`).
    public var adminGroup: String?
    /// Regulatory region (`region`); `EU` disables bluetoothHighQualityRecording (SPEC §7).
    public var region: String?
    /// Seconds a control connection that watches nothing, holds nothing and sends nothing
    /// stays open (`idle_client_timeout`).
    public var idleClientTimeout: Int
    /// Days after which a session never declared in the config, whose application recd has not
    /// seen since, is removed (`session_expiry_days`); 0: never.
    public var sessionExpiryDays: Double

    /// `idle_client_timeout`'s default: 5 min, long past any pause between one program's calls.
    public static let defaultIdleClientTimeout = 300
    /// `session_expiry_days`'s default: a week, past any holiday of a program still in use.
    public static let defaultSessionExpiryDays = 7.0
    public static let sessionExpiryDaysRange = 0.0...36_500.0

    /// Samples per second the players of one user who is not an administrator may move together
    /// (`player_load_per_user`; `PlayerLoad`), in `SessionStore.playerLoadPerUserRange`.
    public var playerLoadPerUser: Int

    public init(
        socket: String, stateDir: String, adminGroup: String? = nil, region: String? = nil,
        idleClientTimeout: Int = DaemonSection.defaultIdleClientTimeout,
        playerLoadPerUser: Int = SessionStore.defaultPlayerLoadPerUser,
        sessionExpiryDays: Double = DaemonSection.defaultSessionExpiryDays
    ) {
        self.socket = socket
        self.stateDir = stateDir
        self.adminGroup = adminGroup
        self.region = region
        self.idleClientTimeout = idleClientTimeout
        self.playerLoadPerUser = playerLoadPerUser
        self.sessionExpiryDays = sessionExpiryDays
    }
}

/// `[jack]`: which JACK server to join and how recd may treat it.
public struct JackSection: Sendable, Equatable {
    /// Server name; nil means libjack's default (so `JACK_DEFAULT_SERVER` is honoured).
    /// The file spells nil as `server = default`.
    public var server: String?
    /// recd's JACK client name (`client_name`).
    public var clientName: String
    /// Whether recd may call jack_set_buffer_size for a session's preferred IO buffer duration.
    public var allowBufferSizeChanges: Bool

    public static let defaultClientName = "recd"

    public init(
        server: String? = nil, clientName: String = JackSection.defaultClientName,
        allowBufferSizeChanges: Bool = false
    ) {
        self.server = server
        self.clientName = clientName
        self.allowBufferSizeChanges = allowBufferSizeChanges
    }
}

/// `[archive]`: where FLAC segments go, how long they are and how long they are kept.
public struct ArchiveSection: Sendable, Equatable {
    /// Absolute path of the archive root (`dir`).
    public var dir: String
    /// Segment length in seconds (`segment_seconds`), in `segmentSecondsRange`.
    public var segmentSeconds: Int
    /// libFLAC compression level (`compression_level`), in `compressionLevelRange`.
    public var compressionLevel: Int
    /// Retention: delete segments older than this many days (`max_age_days`); nil keeps them.
    public var maxAgeDays: Int?
    /// Retention: delete oldest segments while free space is below this (`min_free_percent`).
    public var minFreePercent: Double?
    /// Silence and stall alarms of every recorder (`silence_threshold_db`, `silence_seconds`,
    /// `stall_seconds`, `on_silence`); a session's section may change each.
    public var silence = SilenceSettings()
    /// Seconds of each recordable session's input kept in memory, so that `record start`
    /// begins that much earlier (`pre_roll_seconds`, in `preRollSecondsRange`); 0: none. A
    /// session's own `pre_roll_seconds` overrides it.
    public var preRollSeconds: Int = 0
    /// Loudness per segment and live readings (`loudness`): `yes` measures with recd's
    /// vectorized EBU R128 engine (a few percent of libFLAC's encoding), `libebur128` with
    /// libebur128 (more CPU than the encoding; the reference, kept as the fallback), `no` not at
    /// all (a studio multitrack that needs no loudness proof).
    public var loudness = LoudnessSetting.yes
    /// The loudness reports' target, LUFS (`loudness_target`: EBU R128 -23, ATSC A/85 -24).
    public var loudnessTarget = -23.0
    /// How far above the target short-term loudness may lie before a second counts as above
    /// it, LU (`loudness_tolerance`).
    public var loudnessTolerance = 1.0

    public static let loudnessTargetRange = -60.0...0.0
    public static let loudnessToleranceRange = 0.0...20.0
    public static let defaultSegmentSeconds = 3600
    public static let preRollSecondsRange = 0...600
    public static let segmentSecondsRange = 1...86400
    public static let defaultCompressionLevel = 5
    public static let compressionLevelRange = 0...8
    public static let maxAgeDaysRange = 1...36500
    public static let minFreePercentRange = 0.0...100.0

    public init(
        dir: String, segmentSeconds: Int = ArchiveSection.defaultSegmentSeconds,
        compressionLevel: Int = ArchiveSection.defaultCompressionLevel,
        maxAgeDays: Int? = nil, minFreePercent: Double? = nil
    ) {
        self.dir = dir
        self.segmentSeconds = segmentSeconds
        self.compressionLevel = compressionLevel
        self.maxAgeDays = maxAgeDays
        self.minFreePercent = minFreePercent
    }
}

/// `[policy]`: tunables of the arbiter.
public struct PolicySection: Sendable, Equatable {
    /// Attenuation applied to other sessions while a duckOthers session is active (`duck_level_db`).
    public var duckLevelDB: Double

    public static let defaultDuckLevelDB = -14.0
    public static let duckLevelDBRange = -96.0...0.0

    public init(duckLevelDB: Double = PolicySection.defaultDuckLevelDB) {
        self.duckLevelDB = duckLevelDB
    }
}

/// `[http]`: the HTTP listener (metrics, status page). The address is checked by the
/// listener's own parser (the daemon's `--check-config` reports it with this line).
public struct HTTPSection: Sendable, Equatable {
    /// `listen`: `HOST:PORT`, or nil for `listen = no` (no listener).
    public var listen: String?
    /// The line of `listen` (0: the default).
    public var listenLine: Int
    /// `token_file`: holds the bearer token peers not on this machine must send.
    public var tokenFile: String?
    /// `token_user`: the account whose read rights a request with the token has for recorded
    /// audio (`/archive/`); nil: the token reads none.
    public var tokenUser: String?
    /// The line of `token_user` (0: not set).
    public var tokenUserLine: Int
    /// `tls_certificate` and `tls_key`: PEM files for HTTPS (both or neither; neither: recd makes
    /// a self-signed pair in its state directory when the listener is not on loopback).
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// `users_file`: the accounts (`recctl web user`); default STATE_DIR/http-users.
    public var usersFile: String?
    /// `session_minutes`: how long a login lasts.
    public var sessionMinutes = 720
    /// `[web-group NAME] feeds`: the feeds (APP/STREAM) each group's listeners may hear.
    public var groups: [String: [String]] = [:]

    public static let sessionMinutesRange = 1...43_200
    public static let defaultListen = "127.0.0.1:9720"

    public init(
        listen: String? = HTTPSection.defaultListen, listenLine: Int = 0, tokenFile: String? = nil,
        tokenUser: String? = nil, tokenUserLine: Int = 0
    ) {
        self.listen = listen
        self.listenLine = listenLine
        self.tokenFile = tokenFile
        self.tokenUser = tokenUser
        self.tokenUserLine = tokenUserLine
    }
}

/// One `[port NAME]` section: a named group of JACK ports that acts as one AVAudioSession port.
public struct PortDecl: Sendable, Equatable {
    /// The section's NAME; unique among ports.
    public var name: String
    public var type: PortType
    public var direction: PortDirection
    /// For input/output ports: the JACK ports behind the group, one per channel, in order.
    /// Entries containing `*` are patterns, kept as written. Empty for duplex ports.
    public var jack: [String]
    /// For duplex ports: the JACK ports recd reads from (the capture side). Empty otherwise.
    public var jackIn: [String]
    /// For duplex ports: the JACK ports recd writes to (the playback side). Empty otherwise.
    public var jackOut: [String]
    /// Channel count: of `jack`, or of `jackIn` for a duplex port. In `channelRange`.
    public var channels: Int
    public var capabilities: Set<PortCapability>
    /// The HFP link codec; set exactly when `type` is bluetoothHFP.
    public var codec: HFPCodec?
    /// ALSA jack-sense control (e.g. "Headphone Jack") that says whether the port is plugged.
    public var sense: String?
    /// ALSA capture switch (e.g. "Capture Switch") whose "off" mutes this input in hardware.
    public var muteSwitch: String?
    /// Line of the section header, for messages that point back at the config.
    public var line: Int

    public static let channelRange = 1...64

    public init(
        name: String, type: PortType, direction: PortDirection, jack: [String] = [],
        jackIn: [String] = [], jackOut: [String] = [], channels: Int,
        capabilities: Set<PortCapability> = [], codec: HFPCodec? = nil,
        sense: String? = nil, muteSwitch: String? = nil, line: Int = 0
    ) {
        self.name = name
        self.type = type
        self.direction = direction
        self.jack = jack
        self.jackIn = jackIn
        self.jackOut = jackOut
        self.channels = channels
        self.capabilities = capabilities
        self.codec = codec
        self.sense = sense
        self.muteSwitch = muteSwitch
        self.line = line
    }
}

/// What a config-declared session records as soon as the daemon starts (`record`).
public enum RecordAtStart: Sendable, Equatable {
    /// `record = no`: nothing until a client asks.
    case no
    /// `record = route`: the session's current input route.
    case route
    /// `record = PORT`: the named port (declared in the same config, able to capture).
    case port(String)
}

/// One `[session APP]` section: a session that exists before any client connects.
public struct SessionDecl: Sendable, Equatable {
    /// The section's APP; unique among sessions.
    public var app: String
    public var category: Category
    public var mode: Mode
    /// Options as written (aliases resolved), in file order. Compatibility with the category
    /// and mode is the daemon's check, not the loader's.
    public var options: [CategoryOption]
    public var priority: PriorityClass
    /// The microphone usage description an input-capable session must have (SPEC §8).
    public var micUsage: String?
    /// Resume after an interruption ends with shouldResume, without a client (SPEC §3).
    public var autoResume: Bool
    public var record: RecordAtStart
    /// Never interrupts others: activation that would interrupt fails with cannotInterruptOthers.
    public var background: Bool
    /// Record permission granted (or denied) by the config itself; nil leaves it to the admin.
    public var permission: RecordPermission?
    /// The silence keys this section sets (the rest come from `[archive]`).
    public var silence = SilenceOverride()
    /// Line of the section header, for messages that point back at the config.
    public var line: Int
    /// `pre_roll_seconds` of this session; nil takes `[archive] pre_roll_seconds`.
    public var preRollSeconds: Int?
    /// `trigger_db`: the declared recorder (`record`) is armed for level-triggered takes at
    /// this level (dBFS, `triggerDBRange`); nil records continuously.
    public var triggerDB: Double?
    /// `trigger_hold_seconds`: a take ends this long after the level fell below; nil: 10.
    public var triggerHoldSeconds: Double?

    public static let triggerDBRange = -120.0...0.0
    public static let triggerHoldSecondsRange = 0.0...86_400.0

    public init(
        app: String, category: Category = .initial, mode: Mode = .default,
        options: [CategoryOption] = [], priority: PriorityClass = .normal,
        micUsage: String? = nil, autoResume: Bool = false, record: RecordAtStart = .no,
        background: Bool = false, permission: RecordPermission? = nil, line: Int = 0
    ) {
        self.app = app
        self.category = category
        self.mode = mode
        self.options = options
        self.priority = priority
        self.micUsage = micUsage
        self.autoResume = autoResume
        self.record = record
        self.background = background
        self.permission = permission
        self.line = line
    }
}

/// `[archive] loudness`: whether, and with which code, segments' loudness is measured.
public enum LoudnessSetting: String, Sendable, CaseIterable {
    /// recd's vectorized EBU R128 engine (Codec's R128Engine).
    case yes
    /// libebur128 itself.
    case libebur128
    /// No loudness.
    case no
}
