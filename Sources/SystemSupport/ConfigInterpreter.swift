// Gives meaning to raw INI sections: which sections and keys exist, what each value may be,
// and the rules between keys of one section (duplex ports, channel counts, HFP codecs) and
// between sections (a session's `record` port). Category × mode × option compatibility is
// not checked here: the daemon checks it with the policy core's tables.

import SessionPolicy

/// The kinds of section a config may hold, with their keys.
enum ConfigSectionKind: String, CaseIterable {
    case daemon, jack, archive, policy, port, session, http, replicate, voice, evidence
    /// `[web-group NAME]`: the feeds the accounts of a group may hear (`feeds`).
    case webGroup = "web-group"

    var keys: [String] {
        switch self {
        case .daemon:
            [
                "socket", "state_dir", "admin_group", "region", "idle_client_timeout", "player_load_per_user",
                "session_expiry_days",
            ]
        case .jack: ["server", "client_name", "allow_buffer_size_changes"]
        case .archive:
            [
                "dir", "segment_seconds", "compression_level", "max_age_days", "min_free_percent",
                "pre_roll_seconds", "loudness", "loudness_target", "loudness_tolerance",
            ]
                + SilenceSettings.keys
        case .policy: ["duck_level_db"]
        case .voice: ["echo_suppression"]
        case .http:
            [
                "listen", "token_file", "token_user", "tls_certificate", "tls_key", "users_file", "session_minutes",
            ]
        case .webGroup: ["feeds"]
        case .replicate: ReplicateSection.keys
        case .evidence: EvidenceSection.keys
        case .port:
            [
                "type", "direction", "jack", "jack_in", "jack_out", "channels", "capabilities",
                "codec", "sense", "mute_switch",
            ]
        case .session:
            [
                "category", "mode", "options", "priority", "mic_usage", "auto_resume", "record",
                "background", "permission", "pre_roll_seconds", "trigger_db", "trigger_hold_seconds",
            ] + SilenceSettings.keys
        }
    }

    /// The keys whose values are comma-separated lists: only these may continue on indented
    /// lines, and only their items expand ranges such as `{1..32}`.
    var listKeys: [String] {
        switch self {
        case .port: ["jack", "jack_in", "jack_out", "capabilities"]
        case .session: ["options"]
        case .webGroup: ["feeds"]
        case .evidence: ["tsa_url"]
        case .daemon, .jack, .archive, .policy, .http, .replicate, .voice: []
        }
    }

    /// `[port NAME]` and `[session APP]` carry a name; the others stand alone.
    var nameNoun: String? {
        switch self {
        case .port: "port name"
        case .session: "app name"
        case .webGroup: "group name"
        case .daemon, .jack, .archive, .policy, .http, .replicate, .voice, .evidence: nil
        }
    }

    static let usage =
        "[daemon], [jack], [archive], [policy], [http], [replicate], [voice], [evidence], [port NAME], "
        + "[session APP] or [web-group NAME]"
}

/// The keys of one section, checked for unknown and repeated keys.
struct ConfigSectionFields {
    let title: String
    let line: Int
    private var fields: [String: ConfigField] = [:]

    init(
        _ section: ConfigRawSection, title: String, kind: ConfigSectionKind,
        issues: inout ConfigIssues
    ) {
        self.title = title
        self.line = section.line
        for entry in section.entries {
            let field = ConfigField(section: title, entry: entry)
            guard kind.keys.contains(entry.key) else {
                issues.add(
                    line: entry.line,
                    "\(title) unknown key \(entry.key.quotedForMessage); use one of \(kind.keys.joined(separator: ", "))"
                )
                continue
            }
            if let continuation = entry.continuations.first, !kind.listKeys.contains(entry.key) {
                let lists = kind.listKeys.isEmpty ? "" : " (here: \(kind.listKeys.joined(separator: ", ")))"
                issues.add(
                    line: continuation.line,
                    "\(title) \(entry.key): indented line \(continuation.value.quotedForMessage) would continue its value, but only list values\(lists) continue on indented lines; remove the indentation"
                )
                continue
            }
            if let earlier = fields[entry.key] {
                field.complain(
                    "sets \(entry.key) again (first set on line \(earlier.line)); give each key once",
                    in: &issues)
                continue
            }
            fields[entry.key] = field
        }
    }

    subscript(key: String) -> ConfigField? { fields[key] }

    /// Records that a required key is missing, at the section header.
    func missing(_ key: String, _ hint: String, in issues: inout ConfigIssues) {
        issues.add(line: line, "\(title) needs \(key); \(hint)", isMissingKey: true)
    }
}

/// Turns raw sections into a RecdConfig, collecting every issue it finds.
struct ConfigInterpreter {
    let environment: [String: String]
    let isRoot: Bool
    var issues = ConfigIssues()

    /// Paths the file leaves out stay nil until the end, then default from the environment.
    private var socket: String?
    private var stateDir: String?
    private var archiveDir: String?
    private var daemon = DaemonSection(socket: "", stateDir: "")
    private var jack = JackSection()
    private var archive = ArchiveSection(dir: "")
    private var policy = PolicySection()
    private var http = HTTPSection()
    private var replicate = ReplicateSection()
    private var voice = VoiceSection()
    private var evidence = EvidenceSection()
    private var ports: [PortDecl] = []
    private var sessions: [SessionDecl] = []
    /// Sessions' `record` fields, resolved once every port is known.
    private var pendingRecords: [(session: Int, field: ConfigField)] = []

    init(environment: [String: String], isRoot: Bool) {
        self.environment = environment
        self.isRoot = isRoot
    }

    /// The config the sections describe, or nil when `issues` holds at least one problem.
    mutating func interpret(_ sections: [ConfigRawSection], source: String) -> RecdConfig? {
        var firstLineOfSingleton: [ConfigSectionKind: Int] = [:]
        var firstLineOfName: [String: Int] = [:]  // "port mic", "session radio"

        for section in sections {
            guard let (kind, name) = header(of: section) else { continue }
            let title = name.map { "[\(kind.rawValue) \($0)]" } ?? "[\(kind.rawValue)]"
            let identity = name.map { "\(kind.rawValue) \($0)" } ?? kind.rawValue
            if let earlier = name == nil ? firstLineOfSingleton[kind] : firstLineOfName[identity] {
                let advice =
                    name == nil
                    ? "put all its keys in one section"
                    : "give each \(kind.rawValue) a different name"
                issues.add(
                    line: section.line,
                    "\(title) appears twice (first on line \(earlier)); \(advice)")
                continue
            }
            if name == nil {
                firstLineOfSingleton[kind] = section.line
            } else {
                firstLineOfName[identity] = section.line
            }

            let fields = ConfigSectionFields(section, title: title, kind: kind, issues: &issues)
            switch kind {
            case .daemon: readDaemon(fields)
            case .jack: readJack(fields)
            case .archive: readArchive(fields)
            case .policy: readPolicy(fields)
            case .http: readHTTP(fields)
            case .replicate: replicate = Self.readReplicate(fields, in: &issues)
            case .voice: voice = Self.readVoice(fields, in: &issues)
            case .evidence: evidence = Self.readEvidence(fields, in: &issues)
            case .port: if let name, let port = readPort(name, fields) { ports.append(port) }
            case .session: if let name { sessions.append(readSession(name, fields)) }
            case .webGroup: if let name { http.groups[name] = fields["feeds"]?.list(in: &issues) ?? [] }
            }
        }
        resolveRecords()
        guard issues.isEmpty else { return nil }

        daemon.socket = socket ?? ConfigDefaults.socket(environment: environment, isRoot: isRoot)
        daemon.stateDir =
            stateDir ?? ConfigDefaults.stateDir(environment: environment, isRoot: isRoot)
        archive.dir = archiveDir ?? ConfigDefaults.archiveDir(stateDir: daemon.stateDir)
        if http.listenLine == 0 { http.listen = ConfigDefaults.listen(environment: environment, isRoot: isRoot) }
        var config = RecdConfig(
            daemon: daemon, jack: jack, archive: archive,
            policy: policy, ports: ports, sessions: sessions, source: source)
        config.http = http
        config.replicate = replicate
        config.voice = voice
        config.evidence = evidence
        return config
    }

    // MARK: - Headers

    /// The section's kind and name, or nil (with an issue) when the header is not one of ours.
    private mutating func header(of section: ConfigRawSection) -> (ConfigSectionKind, String?)? {
        let text = section.header.trimmedWhitespace
        let word = String(text.prefix { !$0.isWhitespace })
        let rest = String(text.dropFirst(word.count)).trimmedWhitespace
        guard let kind = ConfigSectionKind(rawValue: word) else {
            issues.add(
                line: section.line,
                "unknown section [\(section.header)]; use \(ConfigSectionKind.usage)")
            return nil
        }
        guard let noun = kind.nameNoun else {
            if !rest.isEmpty {
                issues.add(
                    line: section.line,
                    "[\(kind.rawValue)] takes no name, found \(rest.quotedForMessage); write [\(kind.rawValue)]"
                )
                return nil
            }
            return (kind, nil)
        }
        let placeholder = kind == .port ? "NAME" : "APP"
        guard ConfigName.isValid(rest) else {
            let problem =
                rest.isEmpty ? "has no \(noun)" : "\(rest.quotedForMessage) is not a valid \(noun)"
            issues.add(
                line: section.line,
                "[\(section.header)]: \(problem); write [\(kind.rawValue) \(placeholder)] with 1 to \(ConfigName.maxLength) characters from \(ConfigName.allowedText)"
            )
            return nil
        }
        if kind == .port, RecordTarget.reservedWords.contains(rest) {
            issues.add(
                line: section.line,
                "[\(section.header)]: \(rest.quotedForMessage) cannot name a port, because record = \(rest) means something else; choose another name"
            )
            return nil
        }
        return (kind, rest)
    }

    // MARK: - Singleton sections

    private mutating func readDaemon(_ fields: ConfigSectionFields) {
        socket = fields["socket"]?.absolutePath(
            maxBytes: ConfigDefaults.maxSocketPathBytes, in: &issues)
        stateDir = fields["state_dir"]?.absolutePath(in: &issues)
        daemon.adminGroup = fields["admin_group"]?.token(
            "a group name", maxLength: 32, allowed: ConfigName.isNameCharacter,
            allowedText: ConfigName.allowedText, in: &issues)
        daemon.region = fields["region"]?.token(
            "a region code", maxLength: 16, allowed: ConfigName.isNameCharacter,
            allowedText: ConfigName.allowedText, in: &issues)
        if let timeout = fields["idle_client_timeout"]?.integer(in: 10...86_400, in: &issues) {
            daemon.idleClientTimeout = timeout
        }
        if let load = fields["player_load_per_user"]?.integer(in: SessionStore.playerLoadPerUserRange, in: &issues) {
            daemon.playerLoadPerUser = load
        }
        if let days = fields["session_expiry_days"]?.number(in: DaemonSection.sessionExpiryDaysRange, in: &issues) {
            daemon.sessionExpiryDays = days
        }
    }

    private mutating func readJack(_ fields: ConfigSectionFields) {
        if let field = fields["server"] {
            if let server = field.text(
                describing: "a JACK server name, or default for libjack's default", in: &issues)
            {
                jack.server = server == "default" ? nil : server
            }
        }
        if let field = fields["client_name"],
            let name = field.token(
                "a JACK client name", maxLength: ConfigDefaults.maxJackClientNameBytes,
                allowed: { $0 != ":" && !$0.isNewline && $0.isASCII },
                allowedText: "printable ASCII except \":\"", in: &issues)
        {
            if name == jack.server ?? "default" {
                field.complainAboutKey(
                    "is the JACK server's name too; jackd's socket for a client of that name replaces "
                        + "the server's own and cuts every other client off; choose another client_name",
                    in: &issues)
            } else {
                jack.clientName = name
            }
        }
        if let value = fields["allow_buffer_size_changes"]?.yesNo(in: &issues) {
            jack.allowBufferSizeChanges = value
        }
    }

    private mutating func readArchive(_ fields: ConfigSectionFields) {
        archiveDir = fields["dir"]?.absolutePath(in: &issues)
        if let value = fields["segment_seconds"]?.integer(
            in: ArchiveSection.segmentSecondsRange, in: &issues)
        {
            archive.segmentSeconds = value
        }
        if let value = fields["compression_level"]?.integer(
            in: ArchiveSection.compressionLevelRange, in: &issues)
        {
            archive.compressionLevel = value
        }
        archive.maxAgeDays = fields["max_age_days"]?.integer(
            in: ArchiveSection.maxAgeDaysRange, in: &issues)
        archive.minFreePercent = fields["min_free_percent"]?.number(
            in: ArchiveSection.minFreePercentRange, in: &issues)
        archive.silence = archive.silence.applying(Self.readSilence(fields, in: &issues))
        if let value = fields["pre_roll_seconds"]?.integer(in: ArchiveSection.preRollSecondsRange, in: &issues) {
            archive.preRollSeconds = value
        }
        if let value = fields["loudness"]?.word(LoudnessSetting.self, noun: "a loudness setting", in: &issues) {
            archive.loudness = value
        }
        if let value = fields["loudness_target"]?.number(in: ArchiveSection.loudnessTargetRange, in: &issues) {
            archive.loudnessTarget = value
        }
        if let value = fields["loudness_tolerance"]?.number(in: ArchiveSection.loudnessToleranceRange, in: &issues) {
            archive.loudnessTolerance = value
        }
    }

    private mutating func readPolicy(_ fields: ConfigSectionFields) {
        if let value = fields["duck_level_db"]?.number(
            in: PolicySection.duckLevelDBRange, in: &issues)
        {
            policy.duckLevelDB = value
        }
    }

    private mutating func readHTTP(_ fields: ConfigSectionFields) {
        if let field = fields["listen"],
            let value = field.text(describing: "HOST:PORT, e.g. \(HTTPSection.defaultListen), or no", in: &issues)
        {
            http.listen = value == "no" ? nil : value
            http.listenLine = field.line
        }
        http.tokenFile = fields["token_file"]?.absolutePath(in: &issues)
        if let field = fields["token_user"] {
            http.tokenUser = field.token(
                "a user name", maxLength: 32, allowed: ConfigName.isNameCharacter,
                allowedText: ConfigName.allowedText, in: &issues)
            http.tokenUserLine = field.line
        }
        http.tlsCertificate = fields["tls_certificate"]?.absolutePath(in: &issues)
        http.tlsKey = fields["tls_key"]?.absolutePath(in: &issues)
        http.usersFile = fields["users_file"]?.absolutePath(in: &issues)
        if let minutes = fields["session_minutes"]?.integer(in: HTTPSection.sessionMinutesRange, in: &issues) {
            http.sessionMinutes = minutes
        }
        if (http.tlsCertificate == nil) != (http.tlsKey == nil) {
            issues.add(
                line: fields.line,
                "[http] tls_certificate and tls_key go together; set both, or neither (recd then makes a self-signed "
                    + "certificate in its state_dir)")
        }
    }

    // MARK: - Ports

    private mutating func readPort(_ name: String, _ fields: ConfigSectionFields) -> PortDecl? {
        let type = fields["type"]?.word(PortType.self, noun: "a port type", in: &issues)
        if fields["type"] == nil {
            fields.missing(
                "type", "use one of \(PortType.allCases.map(\.rawValue).joined(separator: ", "))",
                in: &issues
            )
        }
        let direction = fields["direction"]?.word(
            PortDirection.self, noun: "a direction", in: &issues)
        if fields["direction"] == nil {
            fields.missing("direction", "use input, output or duplex", in: &issues)
        }
        let jack = fields["jack"].flatMap { jackNames($0) }
        let jackIn = fields["jack_in"].flatMap { jackNames($0) }
        let jackOut = fields["jack_out"].flatMap { jackNames($0) }
        let channels = fields["channels"]?.integer(in: PortDecl.channelRange, in: &issues)
        let capabilities = fields["capabilities"]?.words(
            PortCapability.self, noun: "a port capability", in: &issues)
        let codec = fields["codec"]?.word(HFPCodec.self, noun: "an HFP codec", in: &issues)
        let sense = fields["sense"]?.text(
            describing: "the ALSA jack-sense control's name, e.g. Headphone Jack", in: &issues)
        let muteSwitch = fields["mute_switch"]?.text(
            describing: "the ALSA capture switch's name, e.g. Capture Switch", in: &issues)

        if let type {
            if type == .bluetoothHFP, fields["codec"] == nil {
                fields.missing(
                    "codec",
                    "for type bluetoothHFP write codec = cvsd (narrowband, 8 kHz) or codec = msbc (wideband, 16 kHz)",
                    in: &issues)
            } else if type != .bluetoothHFP, let field = fields["codec"] {
                field.complain("is only for type bluetoothHFP; remove codec", in: &issues)
            }
        }

        // Which key lists the JACK ports that count the channels.
        var channelList: (key: String, names: [String]?)?
        switch direction {
        case .input?, .output?:
            for key in ["jack_in", "jack_out"] {
                fields[key]?.complainAboutKey(
                    "only a duplex port has \(key); use jack", in: &issues)
            }
            if fields["jack"] == nil {
                fields.missing(
                    "jack",
                    "list the JACK ports behind it, e.g. jack = system:capture_1, system:capture_2",
                    in: &issues)
            } else {
                channelList = ("jack", jack)
            }
        case .duplex?:
            fields["jack"]?.complainAboutKey(
                "a duplex port has jack_in and jack_out instead of jack", in: &issues)
            for key in ["jack_in", "jack_out"] where fields[key] == nil {
                fields.missing(
                    key,
                    "a duplex port names the JACK ports recd reads from (jack_in) and writes to (jack_out)",
                    in: &issues)
            }
            if fields["jack_in"] != nil { channelList = ("jack_in", jackIn) }
        case nil:
            break
        }

        var channelCount: Int?
        if let (key, names) = channelList, let names, let listField = fields[key] {
            if let pattern = names.first(where: { $0.contains("*") }) {
                if fields["channels"] == nil {
                    listField.complain(
                        "is a pattern, so the channel count is not known; add channels = N",
                        about: pattern,
                        in: &issues)
                }
                channelCount = channels
            } else if let channelsField = fields["channels"] {
                if let channels, channels != names.count {
                    channelsField.complain(
                        "does not match the \(names.count) JACK port\(names.count == 1 ? "" : "s") in \(key) (line \(listField.line)); give one JACK port per channel",
                        in: &issues)
                }
                channelCount = channels
            } else if !PortDecl.channelRange.contains(names.count) {
                tooManyPorts(names.count, listField)
            } else {
                channelCount = names.count
            }
        }

        if direction == .duplex, let jackOut, let field = fields["jack_out"],
            !jackOut.contains(where: { $0.contains("*") }),
            !PortDecl.channelRange.contains(jackOut.count)
        {
            tooManyPorts(jackOut.count, field)
        }

        guard let type, let direction, let channelCount else { return nil }
        return PortDecl(
            name: name, type: type, direction: direction, jack: jack ?? [], jackIn: jackIn ?? [],
            jackOut: jackOut ?? [], channels: channelCount, capabilities: Set(capabilities ?? []),
            codec: codec, sense: sense, muteSwitch: muteSwitch, line: fields.line)
    }

    /// More names than channels: a range or continuation lines can list any number.
    private mutating func tooManyPorts(_ count: Int, _ field: ConfigField) {
        let range = PortDecl.channelRange
        field.complainAboutKey(
            "names \(count) JACK ports; a port has \(range.lowerBound)...\(range.upperBound) channels",
            in: &issues)
    }

    /// A list of JACK port names or patterns, each `client:port`.
    private mutating func jackNames(_ field: ConfigField) -> [String]? {
        guard let items = field.listItems(in: &issues) else { return nil }
        guard !items.isEmpty else {
            field.complainAboutKey(
                "is empty; list JACK ports as client:port, e.g. system:capture_1", in: &issues)
            return nil
        }
        for item in items {
            let parts = item.text.split(
                separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count != 2 || parts[0].isEmpty || parts[1].isEmpty {
                let hint =
                    item.text.contains("=") && item.line != field.line
                    ? "; an indented line continues the list above, so to start a new key remove the indentation"
                    : ""
                field.complain(
                    "is not a JACK port name; write client:port, e.g. system:capture_1\(hint)",
                    about: item.text, line: item.line,
                    in: &issues)
                return nil
            }
        }
        return items.map(\.text)
    }

    // MARK: - Sessions

    /// The session as declared. Keys with bad values keep their defaults: the issue recorded
    /// for them stops the config from being used anyway.
    private mutating func readSession(_ app: String, _ fields: ConfigSectionFields) -> SessionDecl {
        var session = SessionDecl(app: app, line: fields.line)
        if let category = category(fields["category"]) { session.category = category }
        if let mode = fields["mode"]?.word(Mode.self, noun: "a mode", in: &issues) {
            session.mode = mode
        }
        if let options = fields["options"]?.words(
            CategoryOption.self, noun: "a category option",
            note: " (allowBluetooth is accepted as the old name of allowBluetoothHFP)",
            parse: CategoryOption.init(wireName:), in: &issues)
        {
            session.options = options
        }
        if let priority = fields["priority"]?.word(
            PriorityClass.self, noun: "a priority class", in: &issues)
        {
            session.priority = priority
        }
        session.micUsage = fields["mic_usage"]?.text(
            describing: "a sentence saying why the app records, e.g. Records the studio feed",
            in: &issues)
        if let autoResume = fields["auto_resume"]?.yesNo(in: &issues) {
            session.autoResume = autoResume
        }
        if let background = fields["background"]?.yesNo(in: &issues) {
            session.background = background
        }
        session.permission = fields["permission"]?.word(
            RecordPermission.self, noun: "a record permission", in: &issues)
        session.preRollSeconds = fields["pre_roll_seconds"]?.integer(
            in: ArchiveSection.preRollSecondsRange, in: &issues)
        session.triggerDB = fields["trigger_db"]?.number(in: SessionDecl.triggerDBRange, in: &issues)
        session.triggerHoldSeconds = fields["trigger_hold_seconds"]?.number(
            in: SessionDecl.triggerHoldSecondsRange, in: &issues)
        if let field = fields["record"] { pendingRecords.append((sessions.count, field)) }
        session.silence = Self.readSilence(fields, in: &issues)
        return session
    }

    /// A category; `audioProcessing` gets its own message, being a real but retired word.
    private mutating func category(_ field: ConfigField?) -> Category? {
        guard let field else { return nil }
        if field.value == "audioProcessing" {
            field.complain(
                "is deprecated upstream and not supported; use one of \(Category.allCases.map(\.rawValue).joined(separator: ", "))",
                in: &issues)
            return nil
        }
        return field.word(Category.self, noun: "a category", in: &issues)
    }

    /// `record = no | route | PORT`, PORT being a declared port that can capture.
    private mutating func resolveRecords() {
        for (index, field) in pendingRecords {
            switch field.value {
            case RecordTarget.no: sessions[index].record = .no
            case RecordTarget.route: sessions[index].record = .route
            default:
                if let port = ports.first(where: { $0.name == field.value }) {
                    if port.direction.canCapture {
                        sessions[index].record = .port(port.name)
                    } else {
                        field.complain(
                            "is an output port; name an input or duplex port, or use route",
                            in: &issues)
                    }
                } else {
                    let declared = ports.filter(\.direction.canCapture).map(\.name)
                    let portList =
                        declared.isEmpty
                        ? "none is declared" : "declared: \(declared.joined(separator: ", "))"
                    field.complain(
                        "is not no, route or the name of an input port (\(portList)); use no, route or a [port NAME] that captures",
                        in: &issues)
                }
            }
        }
    }
}

/// The words `record` takes besides port names.
enum RecordTarget {
    static let no = "no"
    static let route = "route"
    static let reservedWords: Set<String> = [no, route]
}
