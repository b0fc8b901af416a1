// Tests of the config loader: the embedded default, a file using every key, one table of bad
// inputs with their line numbers and messages, environment defaults, comments, garbage input
// and files that cannot be read.

import Foundation
import Platform
import SessionPolicy
import TestSupport
import Testing

@testable import SystemSupport

private let userEnvironment = [
    "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/home/ann/.state", "HOME": "/home/ann",
]

/// Parses as a non-root user with `userEnvironment`.
private func parse(_ text: String, isRoot: Bool = false) throws(ConfigError) -> RecdConfig {
    try ConfigLoader.parse(
        text: text, source: "test.conf", environment: userEnvironment, isRoot: isRoot)
}

/// The error parsing `text` gives, or nil when it parses.
private func parseError(_ text: String) -> ConfigError? {
    do {
        _ = try parse(text)
        return nil
    } catch {
        return error
    }
}

/// The package root, to find `config/recd.conf.example`.
private let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// A fresh temporary file holding `bytes`; the caller removes it.
private func temporaryFile(_ bytes: [UInt8]) throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("recd-config-test-\(UUID().uuidString).conf").path
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

// MARK: - The embedded default

@Test func embeddedDefaultParses() throws {
    let config = ConfigLoader.embeddedDefault(environment: userEnvironment, isRoot: false)
    #expect(config.source == "<embedded default>")
    #expect(
        config.ports == [
            PortDecl(
                name: "mic", type: .builtInMic, direction: .input, jack: ["system:capture_*"],
                channels: 2, line: config.port(named: "mic")?.line ?? -1),
            PortDecl(
                name: "out", type: .lineOut, direction: .output, jack: ["system:playback_*"],
                channels: 2, line: config.port(named: "out")?.line ?? -1),
        ])
    #expect(config.ports.allSatisfy { $0.line > 0 })
    #expect(config.sessions.isEmpty)
    #expect(
        config.jack == JackSection(server: nil, clientName: "recd", allowBufferSizeChanges: false))
    #expect(config.archive.segmentSeconds == 3600)
    #expect(config.archive.compressionLevel == 5)
    #expect(config.policy.duckLevelDB == -14)
    // A user's recd (XDG_RUNTIME_DIR set): no HTTP listener unless asked.
    #expect(config.http == HTTPSection(listen: nil, listenLine: 0, tokenFile: nil))
    #expect(config.daemon.socket == "/run/user/1000/recd/control.sock")
    #expect(config.daemon.stateDir == "/home/ann/.state/recd")
    #expect(config.archive.dir == "/home/ann/.state/recd/archive")

    // The text is what `recd --check-config` would read: the same parser, the same result.
    let reparsed = try ConfigLoader.parse(
        text: ConfigLoader.embeddedDefaultText, source: "<embedded default>",
        environment: userEnvironment, isRoot: false)
    #expect(reparsed == config)
}

@Test func embeddedDefaultAsRootUsesSystemPaths() {
    let config = ConfigLoader.embeddedDefault(environment: userEnvironment, isRoot: true)
    #expect(config.daemon.socket == "/run/recd/control.sock")
    #expect(config.daemon.stateDir == "/var/lib/recd")
    #expect(config.archive.dir == "/var/lib/recd/archive")
}

// MARK: - Every section and key

private let fullExample = """
    # every section and key
    [daemon]
    socket = /run/recd-test/control.sock
    state_dir = /srv/recd/state
    admin_group = audio-admin
    region = EU

    [jack]
    server = studio
    client_name = recd-main
    allow_buffer_size_changes = yes

    [archive]
    dir = /srv/recd/archive
    segment_seconds = 900
    compression_level = 8
    max_age_days = 30
    min_free_percent = 12.5

    [policy]
    duck_level_db = -20.5

    [port desk]
    type = usbAudio
    direction = input
    jack = usb:capture_1, usb:capture_2
    capabilities =

    [port phones]
    type = headphones
    direction = output
    jack = system:playback_3,system:playback_4
    channels = 2
    sense = Headphone Jack

    [port hfp]
    type = bluetoothHFP
    direction = duplex
    jack_in = bluez:mic
    jack_out = bluez:speaker_l, bluez:speaker_r
    codec = msbc
    capabilities = highQualityRecording

    [port wide]
    type = lineIn
    direction = input
    jack = system:capture_*
    channels = 8

    [session com.example.radio]
    category = playAndRecord
    mode = voiceChat
    options = mixWithOthers, allowBluetooth, duckOthers
    priority = call
    mic_usage = Records the studio feed for the archive
    auto_resume = yes
    record = desk
    background = yes
    permission = granted

    [session logger]
    category = record
    record = route
    permission = denied

    [session player]
    category = playback
    options =
    record = no
    """

@Test func fullExampleParsesIntoTheRightValues() throws {
    let config = try parse(fullExample)
    #expect(config.source == "test.conf")
    #expect(
        config.daemon
            == DaemonSection(
                socket: "/run/recd-test/control.sock", stateDir: "/srv/recd/state",
                adminGroup: "audio-admin", region: "EU"))
    #expect(
        config.jack
            == JackSection(server: "studio", clientName: "recd-main", allowBufferSizeChanges: true))
    #expect(
        config.archive
            == ArchiveSection(
                dir: "/srv/recd/archive", segmentSeconds: 900, compressionLevel: 8, maxAgeDays: 30,
                minFreePercent: 12.5))
    #expect(config.policy == PolicySection(duckLevelDB: -20.5))

    #expect(config.ports.map(\.name) == ["desk", "phones", "hfp", "wide"])
    #expect(
        config.port(named: "desk")
            == PortDecl(
                name: "desk", type: .usbAudio, direction: .input,
                jack: ["usb:capture_1", "usb:capture_2"],
                channels: 2, line: 23))
    #expect(
        config.port(named: "phones")
            == PortDecl(
                name: "phones", type: .headphones, direction: .output,
                jack: ["system:playback_3", "system:playback_4"], channels: 2,
                sense: "Headphone Jack",
                line: 29))
    #expect(
        config.port(named: "hfp")
            == PortDecl(
                name: "hfp", type: .bluetoothHFP, direction: .duplex, jackIn: ["bluez:mic"],
                jackOut: ["bluez:speaker_l", "bluez:speaker_r"], channels: 1,
                capabilities: [.highQualityRecording], codec: .msbc, line: 36))
    #expect(
        config.port(named: "wide")
            == PortDecl(
                name: "wide", type: .lineIn, direction: .input, jack: ["system:capture_*"],
                channels: 8,
                line: 44))
    #expect(config.port(named: "nope") == nil)

    #expect(config.sessions.map(\.app) == ["com.example.radio", "logger", "player"])
    #expect(
        config.session(named: "com.example.radio")
            == SessionDecl(
                app: "com.example.radio", category: .playAndRecord, mode: .voiceChat,
                options: [.mixWithOthers, .allowBluetoothHFP, .duckOthers], priority: .call,
                micUsage: "Records the studio feed for the archive", autoResume: true,
                record: .port("desk"), background: true, permission: .granted, line: 50))
    #expect(
        config.session(named: "logger")
            == SessionDecl(
                app: "logger", category: .record, record: .route, permission: .denied, line: 61))
    #expect(
        config.session(named: "player") == SessionDecl(app: "player", category: .playback, line: 66)
    )
    #expect(config.session(named: "nope") == nil)
}

@Test func playerBudgetPerUser() throws {
    #expect(try parse("[daemon]\n").daemon.playerLoadPerUser == SessionStore.defaultPlayerLoadPerUser)
    #expect(try parse("[daemon]\nplayer_load_per_user = 8000000\n").daemon.playerLoadPerUser == 8_000_000)
}

@Test func shippedExampleConfigLoads() throws {
    let path = packageRoot.appendingPathComponent("config/recd.conf.example").path
    let config = try ConfigLoader.load(path: path, environment: [:])
    #expect(config.source == path)
    #expect(config.daemon.region == "EU")
    #expect(
        config.ports.map(\.name) == ["mic", "speaker", "phones", "desk", "stage", "headset", "bt"])
    #expect(
        config.port(named: "stage")?.jack
            == (1...30).map { "stagebox:capture_\($0)" } + ["stagebox:return_01", "stagebox:return_02"])
    #expect(config.port(named: "headset")?.channels == 1)
    #expect(config.port(named: "bt")?.codec == .msbc)
    #expect(config.session(named: "org.example.logger")?.record == .port("desk"))
    #expect(config.session(named: "org.example.logger")?.priority == .logger)
    #expect(config.session(named: "org.example.phonein")?.priority == .call)
}

@Test func emptyTextGivesAllDefaults() throws {
    let config = try parse("")
    #expect(config.ports.isEmpty && config.sessions.isEmpty)
    #expect(config.jack == JackSection())
    #expect(config.policy == PolicySection())
    #expect(config.archive == ArchiveSection(dir: "/home/ann/.state/recd/archive"))
}

@Test func preRollAndTriggerKeys() throws {
    let config = try parse(
        "[archive]\npre_roll_seconds = 30\n[session a]\npre_roll_seconds = 600\ntrigger_db = -35.5\n"
            + "trigger_hold_seconds = 4\n[session b]\ncategory = record\n")
    #expect(config.archive.preRollSeconds == 30)
    #expect(config.sessions[0].preRollSeconds == 600)
    #expect(config.sessions[0].triggerDB == -35.5 && config.sessions[0].triggerHoldSeconds == 4)
    #expect(config.sessions[1].preRollSeconds == nil && config.sessions[1].triggerDB == nil)
    #expect(try parse("").archive.preRollSeconds == 0)
}

@Test func loudnessKey() throws {
    #expect(try parse("").archive.loudness == .yes)
    #expect(try parse("[archive]\nloudness = no\n").archive.loudness == .no)
    #expect(try parse("[archive]\nloudness = yes\n").archive.loudness == .yes)
    #expect(try parse("[archive]\nloudness = libebur128\n").archive.loudness == .libebur128)
    #expect(throws: (any Error).self) { try parse("[archive]\nloudness = sometimes\n") }
}

@Test func sectionWithoutKeysStillDeclaresASession() throws {
    // libinih calls no handler for a section without keys; the session must not vanish.
    let config = try parse("[session quiet]\n[session loud]\ncategory = playback\n")
    #expect(
        config.sessions == [
            SessionDecl(app: "quiet", line: 1),
            SessionDecl(app: "loud", category: .playback, line: 2),
        ])
}

@Test func longAppNamesSurviveLibinihsSectionLimit() throws {
    // libinih keeps 49 bytes of a section name; a 64-character app id must come through whole.
    let app = String(repeating: "a", count: 60) + ".app"
    let config = try parse("[session \(app)]\ncategory = record\n")
    #expect(config.sessions.map(\.app) == [app])
}

@Test func stateDirMovesTheDefaultArchive() throws {
    let config = try parse("[daemon]\nstate_dir = /data/recd/\n")
    #expect(config.daemon.stateDir == "/data/recd/")
    #expect(config.archive.dir == "/data/recd/archive")
}

@Test func jackServerDefaultMeansLibjacksDefault() throws {
    #expect(try parse("[jack]\nserver = default\n").jack.server == nil)
    #expect(try parse("[jack]\nserver = live\n").jack.server == "live")
}

// MARK: - Bad input: the right line, a message naming key, value and what is accepted

struct BadInput: CustomTestStringConvertible, Sendable {
    let name: String
    let text: String
    let line: Int
    let fragments: [String]
    var testDescription: String { name }
}

private let categories = "ambient, soloAmbient, playback, record, playAndRecord, multiRoute"

private let badInputs: [BadInput] = [
    BadInput(
        name: "unknown section", text: "[daemon]\n\n[deamon]\nsocket = /x\n", line: 3,
        fragments: ["unknown section [deamon]", "[port NAME]", "[session APP]"]),
    BadInput(
        name: "unknown key", text: "[port mic]\ntype = builtInMic\nchanels = 2\n", line: 3,
        fragments: ["[port mic] unknown key \"chanels\"", "channels", "capabilities"]),
    BadInput(
        name: "duplicate key", text: "[jack]\nserver = a\nclient_name = b\nserver = c\n", line: 4,
        fragments: ["[jack] server: \"c\"", "first set on line 2"]),
    BadInput(
        name: "duplicate port",
        text: "[port a]\ntype = lineIn\ndirection = input\njack = x:1\n[port a]\ntype = lineIn\n",
        line: 5,
        fragments: ["[port a] appears twice", "first on line 1"]),
    BadInput(
        name: "duplicate session", text: "[session r]\n\n[session r]\n", line: 3,
        fragments: ["[session r] appears twice", "first on line 1"]),
    BadInput(
        name: "singleton section twice", text: "[policy]\n[jack]\n[policy]\n", line: 3,
        fragments: ["[policy] appears twice", "first on line 1", "one section"]),
    BadInput(
        name: "bad category", text: "[session radio]\nmode = default\ncategory = playbak\n",
        line: 3,
        fragments: [
            "[session radio] category: \"playbak\" is not a category; use one of \(categories)"
        ]),
    BadInput(
        name: "audioProcessing", text: "[session radio]\ncategory = audioProcessing\n", line: 2,
        fragments: ["category: \"audioProcessing\"", "deprecated upstream", categories]),
    BadInput(
        name: "bad mode", text: "[session radio]\nmode = voicechat\n", line: 2,
        fragments: ["mode: \"voicechat\" is not a mode", "voiceChat", "dualRoute"]),
    BadInput(
        name: "bad option in a list", text: "[session r]\noptions = mixWithOthers, duckOther\n",
        line: 2,
        fragments: [
            "options: \"duckOther\" is not a category option", "duckOthers", "allowBluetooth",
        ]),
    BadInput(
        name: "option alias repeats its name",
        text: "[session r]\noptions = allowBluetooth, allowBluetoothHFP\n",
        line: 2, fragments: ["options: \"allowBluetoothHFP\" is listed twice"]),
    BadInput(
        name: "boolean is not yes/no", text: "[session r]\n\nauto_resume = true\n", line: 3,
        fragments: ["auto_resume: \"true\" is not a boolean; use yes or no"]),
    BadInput(
        name: "bad priority", text: "[session r]\npriority = urgent\n", line: 2,
        fragments: ["priority: \"urgent\"", "normal, call"]),
    BadInput(
        name: "bad permission", text: "[session r]\npermission = allowed\n", line: 2,
        fragments: ["permission: \"allowed\"", "undetermined, denied, granted"]),
    BadInput(
        name: "empty mic usage", text: "[session r]\nmic_usage =\n", line: 2,
        fragments: ["mic_usage: \"\" is empty"]),
    BadInput(
        name: "relative state dir", text: "[daemon]\nstate_dir = var/lib/recd\n", line: 2,
        fragments: ["[daemon] state_dir: \"var/lib/recd\" is not an absolute path"]),
    BadInput(
        name: "relative archive dir", text: "[archive]\ndir = ./archive\n", line: 2,
        fragments: ["[archive] dir: \"./archive\" is not an absolute path"]),
    BadInput(
        name: "socket path too long",
        text: "[daemon]\nsocket = /" + String(repeating: "s", count: 120) + "\n",
        line: 2, fragments: ["[daemon] socket:", "at most 107 bytes"]),
    BadInput(
        name: "segment length out of range", text: "[archive]\nsegment_seconds = 0\n", line: 2,
        fragments: ["segment_seconds: \"0\" is out of range; use 1...86400"]),
    BadInput(
        name: "compression level not a number", text: "[archive]\ncompression_level = fast\n",
        line: 2,
        fragments: ["compression_level: \"fast\" is not a whole number; use 0...8"]),
    BadInput(
        name: "max age zero", text: "[archive]\nmax_age_days = 0\n", line: 2,
        fragments: ["max_age_days: \"0\" is out of range"]),
    BadInput(
        name: "free space over 100%", text: "[archive]\nmin_free_percent = 101\n", line: 2,
        fragments: ["min_free_percent: \"101\" is out of range; use 0...100"]),
    BadInput(
        name: "pre-roll over ten minutes", text: "[archive]\npre_roll_seconds = 601\n", line: 2,
        fragments: ["pre_roll_seconds: \"601\" is out of range; use 0...600"]),
    BadInput(
        name: "session pre-roll negative", text: "[session a]\npre_roll_seconds = -1\n", line: 2,
        fragments: ["pre_roll_seconds: \"-1\" is out of range; use 0...600"]),
    BadInput(
        name: "positive trigger level", text: "[session a]\ntrigger_db = 3\n", line: 2,
        fragments: ["trigger_db: \"3\" is out of range"]),
    BadInput(
        name: "positive duck level", text: "[policy]\nduck_level_db = 3\n", line: 2,
        fragments: ["[policy] duck_level_db: \"3\" is out of range; use -96...0"]),
    BadInput(
        name: "NaN duck level", text: "[policy]\nduck_level_db = nan\n", line: 2,
        fragments: ["duck_level_db: \"nan\" is not a number"]),
    BadInput(
        name: "client name with colon", text: "[jack]\nclient_name = re:cd\n", line: 2,
        fragments: ["client_name: \"re:cd\" is not a JACK client name"]),
    BadInput(
        name: "client named like its server", text: "[jack]\nserver = studio\nclient_name = studio\n", line: 3,
        fragments: ["client_name", "the JACK server's name too", "choose another client_name"]),
    BadInput(
        name: "client named default on the default server", text: "[jack]\nclient_name = default\n", line: 2,
        fragments: ["client_name", "the JACK server's name too"]),
    BadInput(
        name: "bad admin group", text: "[daemon]\nadmin_group = a b\n", line: 2,
        fragments: ["admin_group: \"a b\" is not a group name"]),
    BadInput(
        name: "player budget below one stereo player", text: "[daemon]\nplayer_load_per_user = 1000\n", line: 2,
        fragments: ["[daemon] player_load_per_user: \"1000\" is out of range; use 192000...2000000000"]),
    BadInput(
        name: "negative session expiry", text: "[daemon]\nsession_expiry_days = -1\n", line: 2,
        fragments: ["session_expiry_days"]),
    BadInput(
        name: "invalid port name", text: "[port my mic]\ntype = lineIn\n", line: 1,
        fragments: ["\"my mic\" is not a valid port name", "A-Z a-z 0-9 . _ -"]),
    BadInput(
        name: "port without a name", text: "[daemon]\n[port]\n", line: 2,
        fragments: ["[port]: has no port name", "[port NAME]"]),
    BadInput(
        name: "app name too long", text: "[session \(String(repeating: "x", count: 65))]\n",
        line: 1,
        fragments: ["is not a valid app name", "1 to 64 characters"]),
    BadInput(
        name: "reserved port name", text: "[port route]\n", line: 1,
        fragments: ["\"route\" cannot name a port"]),
    BadInput(
        name: "named singleton section", text: "[jack studio]\n", line: 1,
        fragments: ["[jack] takes no name", "\"studio\""]),
    BadInput(
        name: "port type missing", text: "[port a]\ndirection = input\njack = x:1\n", line: 1,
        fragments: ["[port a] needs type", "builtInMic"]),
    BadInput(
        name: "bad port type", text: "[port a]\ntype = mic\ndirection = input\njack = x:1\n",
        line: 2,
        fragments: ["[port a] type: \"mic\" is not a port type", "builtInMic, headsetMic"]),
    BadInput(
        name: "bad direction", text: "[port a]\ntype = lineIn\ndirection = in\njack = x:1\n",
        line: 3,
        fragments: ["direction: \"in\" is not a direction; use one of input, output, duplex"]),
    BadInput(
        name: "duplex with jack",
        text:
            "[port h]\ntype = headsetMic\ndirection = duplex\njack_in = a:1\njack_out = a:2\njack = a:3\n",
        line: 6, fragments: ["[port h] jack: a duplex port has jack_in and jack_out"]),
    BadInput(
        name: "duplex without jack_out",
        text: "[port h]\ntype = headsetMic\ndirection = duplex\njack_in = a:1\n",
        line: 1, fragments: ["[port h] needs jack_out"]),
    BadInput(
        name: "input with jack_in",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1\njack_in = a:2\n",
        line: 5, fragments: ["[port m] jack_in: only a duplex port has jack_in"]),
    BadInput(
        name: "input without jack", text: "[port m]\ntype = lineIn\ndirection = input\n", line: 1,
        fragments: ["[port m] needs jack"]),
    BadInput(
        name: "channels do not match jack",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1, a:2\nchannels = 3\n",
        line: 5, fragments: ["channels: \"3\" does not match the 2 JACK ports in jack (line 4)"]),
    BadInput(
        name: "pattern without channels",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = system:capture_*\n",
        line: 4, fragments: ["jack: \"system:capture_*\" is a pattern", "channels = N"]),
    BadInput(
        name: "too many channels",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:*\nchannels = 65\n",
        line: 5, fragments: ["channels: \"65\" is out of range; use 1...64"]),
    BadInput(
        name: "JACK name without client",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = capture_1\n",
        line: 4, fragments: ["jack: \"capture_1\" is not a JACK port name", "client:port"]),
    BadInput(
        name: "empty item in a list",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1,,a:2\n",
        line: 4, fragments: ["jack: \"a:1,,a:2\" has an empty item"]),
    BadInput(
        name: "JACK port listed twice",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1, a:1\n",
        line: 4, fragments: ["jack: \"a:1\" is listed twice"]),
    BadInput(
        name: "HFP without codec",
        text: "[port bt]\ntype = bluetoothHFP\ndirection = duplex\njack_in = b:1\njack_out = b:2\n",
        line: 1,
        fragments: ["[port bt] needs codec; for type bluetoothHFP write codec = cvsd", "msbc"]),
    BadInput(
        name: "codec on a wired port",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1\ncodec = msbc\n",
        line: 5, fragments: ["[port m] codec: \"msbc\" is only for type bluetoothHFP"]),
    BadInput(
        name: "bad codec",
        text:
            "[port bt]\ntype = bluetoothHFP\ndirection = duplex\njack_in = b:1\njack_out = b:2\ncodec = sbc\n",
        line: 6, fragments: ["codec: \"sbc\" is not an HFP codec; use one of cvsd, msbc"]),
    BadInput(
        name: "bad capability",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1\ncapabilities = hq\n",
        line: 5,
        fragments: [
            "capabilities: \"hq\" is not a port capability; use one of highQualityRecording"
        ]
    ),
    BadInput(
        name: "record names an unknown port",
        text:
            "[port m]\ntype = lineIn\ndirection = input\njack = a:1\n[session r]\nrecord = desk\n",
        line: 6,
        fragments: [
            "record: \"desk\" is not no, route or the name of an input port", "declared: m",
        ]),
    BadInput(
        name: "record names an output port",
        text:
            "[session r]\nrecord = out\n[port out]\ntype = lineOut\ndirection = output\njack = a:1\n",
        line: 2, fragments: ["record: \"out\" is an output port"]),
    BadInput(
        name: "key outside any section", text: "# top\nsocket = /x\n[daemon]\n", line: 2,
        fragments: ["\"socket\" is outside any section"]),
    BadInput(
        name: "line without =", text: "[daemon]\nsocket /run/x\n", line: 2,
        fragments: ["expected \"key = value\" or \"[section]\"", "\"socket /run/x\""]),
    BadInput(
        name: "header without ]", text: "[daemon]\n[port mic\n", line: 2,
        fragments: ["section header \"[port mic\" has no closing \"]\""]),
    BadInput(
        name: "indented key continues a value",
        text: "[port m]\n  type = lineIn\n  direction = input\n",
        line: 3,
        fragments: [
            "[port m] type: indented line \"direction = input\" would continue its value",
            "only list values (here: jack, jack_in, jack_out, capabilities)",
            "remove the indentation",
        ]),
    BadInput(
        name: "single-value key with a continuation line",
        text: "[archive]\nsegment_seconds = 60\n    120\n",
        line: 3,
        fragments: ["[archive] segment_seconds: indented line \"120\"", "only list values"]),
    BadInput(
        name: "indented key after a jack list",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1,\n  a:2\n  channels = 2\n",
        line: 6,
        fragments: [
            "jack: \"channels = 2\" is not a JACK port name",
            "to start a new key remove the indentation",
        ]),
    BadInput(
        name: "open-ended range on a continuation line",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1,\n\n  a:in_{1..}\n",
        line: 6,
        fragments: ["jack: \"a:in_{1..}\" has a malformed range \"{1..}\"", "{01..08}"]),
    BadInput(
        name: "range of letters",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:{a..b}\n",
        line: 4,
        fragments: ["has a malformed range \"{a..b}\""]),
    BadInput(
        name: "range over 1024 items",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1,\n  a:x_{1..2000}\n",
        line: 5,
        fragments: ["\"a:x_{1..2000}\" has a range \"{1..2000}\" of 2000 items", "at most 1024"]),
    BadInput(
        name: "range without closing brace",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:x_{1..4\n",
        line: 4,
        fragments: ["without a closing \"}\""]),
    BadInput(
        name: "empty item on a continuation line",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:1,\n  a:2,,a:3\n",
        line: 5,
        fragments: ["jack: \"a:2,,a:3\" has an empty item"]),
    BadInput(
        name: "range repeats a listed port",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:2\n  a:{1..3}\n",
        line: 5,
        fragments: ["jack: \"a:2\" is listed twice"]),
    BadInput(
        name: "range overruns the channel limit",
        text: "[port m]\ntype = lineIn\ndirection = input\njack = a:{1..65}\n",
        line: 4,
        fragments: ["names 65 JACK ports"]),
    BadInput(
        name: "over-long line",
        text: "[session r]\nmic_usage = " + String(repeating: "w", count: 300) + "\n",
        line: 2,
        fragments: ["line is 312 bytes long", "at most 198 bytes"]),
    BadInput(
        name: "NUL byte", text: "[daemon]\n\n\nregion = E\u{0}U\n", line: 4, fragments: ["NUL byte"]
    ),
    BadInput(
        name: "inline # comment gets a hint", text: "[port m]\ntype = lineIn # the desk\n", line: 2,
        fragments: ["type: \"lineIn # the desk\" is not a port type", "on a line of its own"]),
    BadInput(
        name: "earliest error wins", text: "[policy]\nduck_level_db = 1\n[jack]\nserver =\n",
        line: 2,
        fragments: ["duck_level_db"]),
]

@Test(arguments: badInputs)
func badInputIsRejectedWithLineAndMessage(_ input: BadInput) {
    guard let error = parseError(input.text) else {
        Issue.record("\(input.name): parsed without error")
        return
    }
    #expect(error.file == "test.conf")
    #expect(error.line == input.line, "\(error)")
    for fragment in input.fragments {
        #expect(error.message.contains(fragment), "\(error.message) lacks \(fragment)")
    }
    #expect(error.description == "test.conf:\(input.line): \(error.message)")
}

@Test func categoryMessageMatchesTheDocumentedForm() {
    let error = parseError("# radio\n[session radio]\ncategory = playbak\n")
    #expect(
        error?.description == """
            test.conf:3: [session radio] category: "playbak" is not a category; use one of ambient, \
            soloAmbient, playback, record, playAndRecord, multiRoute
            """)
}

@Test func badInputTableIsLargeAndDistinct() {
    #expect(badInputs.count >= 15)
    #expect(Set(badInputs.map(\.name)).count == badInputs.count)
}

// MARK: - Defaults from the environment

struct EnvironmentCase: CustomTestStringConvertible, Sendable {
    let name: String
    let environment: [String: String]
    let isRoot: Bool
    let socket: String
    let stateDir: String
    /// `[http] listen` when the config leaves it out.
    let listen: String?
    var testDescription: String { name }
}

/// A user's recd (not root, XDG_RUNTIME_DIR set and absolute) keeps per-user places and no
/// HTTP listener; any other (root, a service's user with no runtime directory) the system's.
private let environmentCases: [EnvironmentCase] = [
    EnvironmentCase(
        name: "user with XDG dirs", environment: userEnvironment, isRoot: false,
        socket: "/run/user/1000/recd/control.sock", stateDir: "/home/ann/.state/recd", listen: nil),
    EnvironmentCase(
        name: "user with a runtime dir and HOME", environment: ["XDG_RUNTIME_DIR": "/run/user/9", "HOME": "/home/e"],
        isRoot: false, socket: "/run/user/9/recd/control.sock", stateDir: "/home/e/.local/state/recd", listen: nil),
    EnvironmentCase(
        name: "a service's user: HOME only", environment: ["HOME": "/var/lib/recd"], isRoot: false,
        socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", listen: "127.0.0.1:9720"),
    EnvironmentCase(
        name: "user with trailing slashes",
        environment: ["XDG_RUNTIME_DIR": "/run/user/7/", "HOME": "/home/c/"],
        isRoot: false, socket: "/run/user/7/recd/control.sock",
        stateDir: "/home/c/.local/state/recd", listen: nil),
    EnvironmentCase(
        name: "relative XDG values are ignored",
        environment: ["XDG_RUNTIME_DIR": "run", "XDG_STATE_HOME": "state", "HOME": "/home/d"],
        isRoot: false, socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", listen: "127.0.0.1:9720"),
    EnvironmentCase(
        name: "user with nothing set", environment: [:], isRoot: false,
        socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", listen: "127.0.0.1:9720"),
    EnvironmentCase(
        name: "root ignores XDG", environment: userEnvironment, isRoot: true,
        socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", listen: "127.0.0.1:9720"),
    EnvironmentCase(
        name: "root with nothing set", environment: [:], isRoot: true,
        socket: "/run/recd/control.sock", stateDir: "/var/lib/recd", listen: "127.0.0.1:9720"),
]

@Test(arguments: environmentCases)
func defaultsComeFromTheEnvironment(_ item: EnvironmentCase) throws {
    let config = try ConfigLoader.parse(
        text: "[policy]\n", source: "env.conf", environment: item.environment, isRoot: item.isRoot)
    #expect(config.daemon.socket == item.socket)
    #expect(config.daemon.stateDir == item.stateDir)
    #expect(config.archive.dir == item.stateDir + "/archive")
    #expect(config.http.listen == item.listen)
    let embedded = ConfigLoader.embeddedDefault(environment: item.environment, isRoot: item.isRoot)
    #expect(embedded.daemon == config.daemon && embedded.http.listen == item.listen)
    // recctl and the libraries look where recd listens first, then at the system's.
    let candidates = DefaultPlaces.socketCandidates(environment: item.environment, isRoot: item.isRoot)
    #expect(candidates.first == item.socket && candidates.last == "/run/recd/control.sock")
    // Asked for, a user's recd listens too.
    let asked = try ConfigLoader.parse(
        text: "[http]\nlisten = 127.0.0.1:9999\n", source: "env.conf", environment: item.environment,
        isRoot: item.isRoot)
    #expect(asked.http.listen == "127.0.0.1:9999")
}

@Test func sessionExpiryDays() throws {
    #expect(try parse("[policy]\n").daemon.sessionExpiryDays == 7)
    #expect(try parse("[daemon]\nsession_expiry_days = 0.5\n").daemon.sessionExpiryDays == 0.5)
    #expect(try parse("[daemon]\nsession_expiry_days = 0\n").daemon.sessionExpiryDays == 0)
}

@Test func explicitPathsWinOverTheEnvironment() throws {
    let text = "[daemon]\nsocket = /tmp/r.sock\nstate_dir = /s\n[archive]\ndir = /a\n"
    for isRoot in [false, true] {
        let config = try parse(text, isRoot: isRoot)
        #expect(config.daemon.socket == "/tmp/r.sock")
        #expect(config.daemon.stateDir == "/s")
        #expect(config.archive.dir == "/a")
    }
}

// MARK: - Comments and layout

// MARK: - Lists on continuation lines, and ranges

/// `[port NAME]` for input with `jackLines` as the `jack = ...` key and its continuations.
private func inputPort(_ jackLines: String) -> String {
    "[port desk]\ntype = lineIn\ndirection = input\n\(jackLines)\n[session r]\nrecord = desk\n"
}

private let thirtyTwo = (1...32).map { "system:capture_\($0)" }

@Test func thirtyTwoPortsOnContinuationLinesOrAsARangeLoadTheSame() throws {
    // Four per line, some lines ending with a comma and some not; a comment in between.
    var lines = ["jack = " + thirtyTwo[0..<4].joined(separator: ", ") + ","]
    for start in stride(from: 4, to: 32, by: 4) {
        let line = "       " + thirtyTwo[start..<start + 4].joined(separator: ", ")
        lines.append(start % 8 == 0 ? line + "," : line + "   ; inline comment")
        if start == 16 { lines.append("  # the second desk") }
    }
    let continued = lines.joined(separator: "\n")
    #expect(lines.allSatisfy { $0.utf8.count <= 198 })
    let ranged = "jack = system:capture_{1..32}"
    let leadingEmpty = "jack =\n    system:capture_{1..16}\n\n    system:capture_{17..32}"
    for text in [continued, ranged, leadingEmpty] {
        let path = try temporaryFile(Array(inputPort(text).utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let config = try ConfigLoader.load(path: path, environment: userEnvironment)
        let port = try #require(config.port(named: "desk"))
        #expect(port.jack == thirtyTwo, "\(text)")
        #expect(port.channels == 32)
    }
}

@Test func rangesKeepZeroPaddingAndCountDown() throws {
    let padded = try parse(inputPort("jack = x:in_{01..08}, y:{8..10}, z:{010..8}"))
    #expect(
        padded.port(named: "desk")?.jack
            == (1...8).map { "x:in_0\($0)" } + ["y:8", "y:9", "y:10", "z:010", "z:009", "z:008"])
    let descending = try parse(inputPort("jack = system:capture_{4..1}"))
    #expect(
        descending.port(named: "desk")?.jack
            == ["system:capture_4", "system:capture_3", "system:capture_2", "system:capture_1"])
    let duplex = try parse(
        "[port phone]\ntype = lineIn\ndirection = duplex\njack_in = a:in_{1..2}\njack_out = a:out_1,\n  a:out_2\n"
    )
    #expect(duplex.port(named: "phone")?.jackIn == ["a:in_1", "a:in_2"])
    #expect(duplex.port(named: "phone")?.jackOut == ["a:out_1", "a:out_2"])
    let options = try parse(
        "[session r]\ncategory = playAndRecord\noptions = mixWithOthers,\n    allowBluetoothA2DP\n")
    #expect(options.session(named: "r")?.options == [.mixWithOthers, .allowBluetoothA2DP])
}

@Test func a444ByteListOnOneLineIsStillRefused() throws {
    // 32 ports named system:in_1 ... system:in_32, as the issue's 444-byte line had them.
    let line = "jack = " + (1...32).map { "system:in_\($0)" }.joined(separator: ", ")
    #expect(line.utf8.count == 444)
    let text = inputPort(line)
    let error = try #require(parseError(text))
    #expect(error.line == 4)
    #expect(error.message == "line is 444 bytes long; libinih reads at most 198 bytes per line")
}

@Test func commentsBlankLinesAndLineEndings() throws {
    let text = """
        \u{FEFF}# hash comment
        ; semicolon comment
            # indented comment after a header-less start

        [session r] ; trailing comment on a header
        # between keys
        category = record ; inline comment after a value
        mode = default
        ;mode = spokenAudio
        #mode = voiceChat
        mic_usage = Logs the feed; with a semicolon inside
        """.replacingOccurrences(of: "\n", with: "\r\n")
    let config = try parse(text)
    let session = try #require(config.session(named: "r"))
    #expect(session.category == .record)
    #expect(session.mode == .default)
    #expect(session.micUsage == "Logs the feed; with a semicolon inside")
    #expect(session.line == 5)
}

@Test func lineNumbersCountCRLFAndBlankLines() {
    let error = parseError("[daemon]\r\n\r\n\r\n# c\r\nregion = \r\n")
    #expect(error?.line == 5)
}

// MARK: - Garbage never crashes

@Test func binaryGarbageGivesAnErrorNotACrash() throws {
    var generator = SplitMix64(seed: 42)
    for round in 0..<300 {
        let count = Int(generator.next() % 2000)
        var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        if round % 3 == 0 {
            // Mostly printable, with INI punctuation, to get past the first line.
            let alphabet = Array("[]=:;# \n\tabcportsession*,.-_/\u{1}".utf8)
            bytes = bytes.map { alphabet[Int($0) % alphabet.count] }
        }
        let path = try temporaryFile(bytes)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ConfigLoader.load(path: path, environment: [:])
        } catch {
            #expect(error.file == path)
            #expect(error.line >= 0 && error.line <= bytes.count + 1)
            #expect(!error.message.isEmpty)
        }
    }
}

@Test func invalidUTF8IsReportedWithItsLine() throws {
    let path = try temporaryFile(Array("[daemon]\nregion = EU\n".utf8) + [0xC3, 0x28, 0x0A])
    defer { try? FileManager.default.removeItem(atPath: path) }
    #expect(throws: ConfigError(file: path, line: 3, message: "line is not valid UTF-8")) {
        try ConfigLoader.load(path: path, environment: [:])
    }
}

@Test(arguments: [(198, true), (199, false)])
func longestLineLibinihTakesWhole(length: Int, accepted: Bool) throws {
    // libinih's 200-byte buffer holds 198 bytes, the newline and the NUL; longer lines would
    // be cut into pieces, so they are refused rather than read wrong.
    let prefix = "mic_usage = "
    let usage = String(repeating: "u", count: length - prefix.count)
    let text = "[session r]\r\n\(prefix)\(usage)\r\n"
    if accepted {
        #expect(try parse(text).session(named: "r")?.micUsage == usage)
    } else {
        #expect(parseError(text)?.line == 2)
    }
}

@Test func parseWithoutIsRootAsksGetuid() throws {
    let text = "[policy]\n"
    let implicit = try ConfigLoader.parse(
        text: text, source: "u.conf", environment: userEnvironment)
    let explicit = try ConfigLoader.parse(
        text: text, source: "u.conf", environment: userEnvironment, isRoot: getuid() == 0)
    #expect(implicit == explicit)
}

@Test func veryLongInputWithoutNewlines() {
    let error = parseError(String(repeating: "x", count: 100_000))
    #expect(error?.line == 1)
    #expect(error?.message.contains("100000 bytes") == true)
}

// MARK: - Files

@Test func loadingAMissingFileNamesThePath() {
    let path = "/nonexistent/recd-\(UUID().uuidString).conf"
    do {
        _ = try ConfigLoader.load(path: path, environment: [:])
        Issue.record("loaded a missing file")
    } catch {
        #expect(error.file == path)
        #expect(error.line == 0)
        #expect(error.message.contains("No such file or directory"))
        #expect(error.description.hasPrefix("\(path): cannot read config file"))
    }
}

@Test func loadingADirectoryIsRefused() {
    #expect(throws: ConfigError.self) { try ConfigLoader.load(path: "/tmp", environment: [:]) }
}

@Test("a FIFO, a device or a socket as the config path is refused at once, never read", .timeLimit(.minutes(1)))
func loadingANonRegularFileIsRefusedWithoutBlocking() throws {
    let directory = NSTemporaryDirectory() + "recd-fifo-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let fifo = directory + "/recd.conf"
    #expect(mkfifo(fifo, 0o600) == 0)
    for path in [fifo, "/dev/null"] {
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try ConfigLoader.load(path: path, environment: [:])
            Issue.record("loaded \(path)")
        } catch {
            #expect(error.message.contains("not a regular file"), "\(error)")
        }
        #expect(clock.now - start < .seconds(1), "\(path) took \(clock.now - start)")
    }
}

@Test("a list of 8,000 continued {1..1024} lines is refused at its second line, fast")
func expansionIsRefusedBeforeItGrows() {
    let lines = (0..<8000).map { "  x\($0):p_{1..1024}" }.joined(separator: "\n")
    let text = "[port m]\ntype = lineIn\ndirection = input\njack =\n" + lines + "\n"
    let clock = ContinuousClock()
    let start = clock.now
    let error = parseError(text)
    let took = clock.now - start
    #expect(error?.line == 6, "\(String(describing: error))")
    #expect(error?.message.contains("longer than 1024 items") == true, "\(String(describing: error))")
    #expect(took < .seconds(2), "took \(took)")
}

@Test func loadedFileReportsItsPathAndLines() throws {
    let path = try temporaryFile(
        Array("[jack]\nclient_name = ok\nallow_buffer_size_changes = maybe\n".utf8))
    defer { try? FileManager.default.removeItem(atPath: path) }
    do {
        _ = try ConfigLoader.load(path: path, environment: [:])
        Issue.record("accepted a bad boolean")
    } catch {
        #expect(
            error.description.hasPrefix("\(path):3: [jack] allow_buffer_size_changes: \"maybe\""))
    }
}

// MARK: - [http]

@Test("[http]: listen, token_file and token_user are read with their lines; listen = no turns the listener off; a relative token_file, a token_user that is no name and unknown keys are errors")
func httpSection() throws {
    func parse(_ text: String) throws -> RecdConfig {
        try ConfigLoader.parse(text: text, source: "t.conf", environment: userEnvironment, isRoot: false)
    }
    let on = try parse("[http]\nlisten = 0.0.0.0:9000\ntoken_file = /etc/recd/token\n")
    #expect(on.http == HTTPSection(listen: "0.0.0.0:9000", listenLine: 2, tokenFile: "/etc/recd/token"))
    #expect(try parse("[http]\nlisten = no\n").http.listen == nil)
    #expect(throws: ConfigError.self) { try parse("[http]\ntoken_file = token\n") }
    #expect(throws: ConfigError.self) { try parse("[http]\nport = 80\n") }
    let reader = try parse("[http]\nlisten = 0.0.0.0:9000\ntoken_file = /etc/recd/token\ntoken_user = archive-reader\n")
    #expect(
        reader.http
            == HTTPSection(
                listen: "0.0.0.0:9000", listenLine: 2, tokenFile: "/etc/recd/token", tokenUser: "archive-reader",
                tokenUserLine: 4))
    #expect(throws: ConfigError.self) { try parse("[http]\ntoken_user = a b\n") }
    #expect(throws: ConfigError.self) { try parse("[http]\ntoken_user = ../root\n") }
    #expect(throws: ConfigError.self) { try parse("[http]\nlisten =\n") }
}
