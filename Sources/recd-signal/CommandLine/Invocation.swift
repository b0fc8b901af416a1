// The command line of recd-signal: what it may say, parsed into plain values, and the
// `--help` text. No C and no I/O here; main.swift prints and exits.

/// What one run of recd-signal was asked to do.
struct Invocation: Equatable {
    /// `--server NAME`; nil: libjack's default server (JACK_DEFAULT_SERVER, else "default").
    var serverName: String?
    /// `--name CLIENT`; JACK may add a suffix if the name is taken (the ready line says).
    var clientName: String
    /// `--rate-check`: measure the server's real frame rate while running (see the help).
    var rateCheck: Bool
    var command: Command
}

/// The subcommand and its options.
enum Command: Equatable {
    case play(PlayOptions)
    case capture(CaptureOptions)
    /// Registers input ports with these names and holds them until SIGTERM/SIGINT; then
    /// unregisters them and closes, or with `closeOnly` (`--close-only`) just closes the client.
    case ports(names: [String], closeOnly: Bool = false)
    /// A room in the graph: the input's sound, delayed and reverberated, plus a near end, out
    /// of the output (for echo cancellation).
    case echo(EchoOptions)
}

struct EchoOptions: Equatable {
    /// Short names of the input (the loudspeaker's feed) and the output (the microphone's).
    var ports: [String]
    /// `--near FILE`: raw float32 mono samples added to the output from frame 0.
    var nearPath: String?
    /// `--delay MS`: the direct sound's delay; `--gain DB`: its level.
    var delayMilliseconds: Double
    var gainDB: Double
    var seconds: Double?
    /// `connections[0]` goes to the input, the output to `connections[1]`; nil: unconnected.
    var connections: [String?]
}

struct PlayOptions: Equatable {
    /// Short names of the output ports, in channel order.
    var ports: [String]
    var signal: SignalSpec
    /// `--level`; the help says what it means for each signal.
    var levelDBFS: Double
    /// Stop after this many seconds of frames; nil: run until SIGTERM/SIGINT.
    var seconds: Double?
    /// Port i goes to `connections[i]`; nil entries (and missing ones) stay unconnected.
    var connections: [String?]
    /// `--silent-from S --silent-for D`: zeros from S seconds of frames on, for D seconds.
    var silence: (from: Double, length: Double)? = nil
    /// `--envelope`: the level's steps, repeated; empty: the level throughout.
    var envelope: [EnvelopeSpec] = []

    static func == (lhs: PlayOptions, rhs: PlayOptions) -> Bool {
        lhs.ports == rhs.ports && lhs.signal == rhs.signal && lhs.levelDBFS == rhs.levelDBFS
            && lhs.seconds == rhs.seconds && lhs.connections == rhs.connections
            && lhs.silence?.from == rhs.silence?.from && lhs.silence?.length == rhs.silence?.length
            && lhs.envelope == rhs.envelope
    }
}

/// One step of `--envelope`: `SECONDS:DB` (held), `SECONDS:DB>DB` (a ramp, linear in dB) or
/// `SECONDS:off` (zeros); dB relative to --level.
struct EnvelopeSpec: Equatable {
    var seconds: Double
    /// nil: off.
    var fromDB: Double?
    var toDB: Double?

    static let maxSteps = 1024
    static let secondsRange = 0.001...3600.0
    static let dBRange = -144.0...0.0

    /// The steps of `text` (comma-separated).
    static func parse(_ text: String) throws(UsageError) -> [EnvelopeSpec] {
        let words = text.split(separator: ",", omittingEmptySubsequences: false)
        guard words.count <= maxSteps else {
            throw UsageError("--envelope has \(words.count) steps; at most \(maxSteps)")
        }
        var steps: [EnvelopeSpec] = []
        for word in words {
            let bad = UsageError(
                "bad --envelope step '\(word)' (want SECONDS:DB, SECONDS:DB>DB or SECONDS:off; seconds "
                    + "\(secondsRange.lowerBound)...\(secondsRange.upperBound), dB -144...0)")
            let parts = word.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let seconds = Double(parts[0]), secondsRange.contains(seconds) else { throw bad }
            if parts[1] == "off" {
                steps.append(EnvelopeSpec(seconds: seconds))
                continue
            }
            let levels = parts[1].split(separator: ">", omittingEmptySubsequences: false)
            var values: [Double] = []
            for level in levels {
                guard let value = Double(level), dBRange.contains(value) else { throw bad }
                values.append(value)
            }
            guard values.count == 1 || values.count == 2 else { throw bad }
            steps.append(EnvelopeSpec(seconds: seconds, fromDB: values[0], toDB: values.count == 2 ? values[1] : nil))
        }
        return steps
    }
}

struct CaptureOptions: Equatable {
    /// Short names of the input ports, in channel order.
    var ports: [String]
    var outputPath: String
    /// `--wav`: a WAVE_FORMAT_IEEE_FLOAT header before the samples; else a headerless file.
    var wav: Bool
    var seconds: Double?
    /// `connections[i]` goes to port i; nil entries stay unconnected.
    var connections: [String?]
}

/// A signal `play` can generate, as given to `--signal`.
enum SignalSpec: Equatable {
    /// The position-coding sequence documented in the help (`counterFormula`).
    case counter
    /// A sum of sines, each at the level.
    case sine(frequencies: [Double])
    /// A naive (aliasing) square wave, ±level.
    case square(frequency: Double)
    /// Deterministic pink noise (Paul Kellet's filter on seeded white noise).
    case pink
    case silence

    init(parsing text: String) throws(UsageError) {
        func frequency(_ word: Substring) throws(UsageError) -> Double {
            guard let value = Double(word), value.isFinite, value > 0 else {
                throw UsageError("bad frequency '\(word)' in --signal \(text) (want Hz > 0)")
            }
            return value
        }
        switch text {
        case "counter": self = .counter
        case "pink": self = .pink
        case "silence": self = .silence
        default:
            if text.hasPrefix("sine:") {
                let words = text.dropFirst("sine:".count).split(
                    separator: "+", omittingEmptySubsequences: false)
                var frequencies: [Double] = []
                for word in words { frequencies.append(try frequency(word)) }
                self = .sine(frequencies: frequencies)
            } else if text.hasPrefix("square:") {
                self = .square(frequency: try frequency(text.dropFirst("square:".count)))
            } else {
                throw UsageError(
                    "unknown signal '\(text)' (counter, sine:FREQ[+FREQ...], square:FREQ, pink, silence)"
                )
            }
        }
    }

    /// The frequencies that must lie below the Nyquist frequency.
    var frequencies: [Double] {
        switch self {
        case .sine(let frequencies): frequencies
        case .square(let frequency): [frequency]
        case .counter, .pink, .silence: []
        }
    }
}

/// A command line recd-signal cannot make sense of: exit status 2.
struct UsageError: Error, Equatable {
    var message: String
    init(_ message: String) { self.message = message }
}

/// What parsing produced: a run, or a request for the help text.
enum ParsedCommandLine: Equatable {
    case run(Invocation)
    case help
}

extension Invocation {
    static let defaultClientName = "recd-signal"
    static let defaultLevelDBFS = -6.0

    private enum OptionKind { case flag, value }

    /// Every option, and which commands take it (nil: global).
    private static let options: [String: (kind: OptionKind, commands: Set<String>?)] = [
        "server": (.value, nil),
        "name": (.value, nil),
        "rate-check": (.flag, nil),
        "ports": (.value, ["play", "capture", "ports", "echo"]),
        "near": (.value, ["echo"]),
        "delay": (.value, ["echo"]),
        "gain": (.value, ["echo"]),
        "signal": (.value, ["play"]),
        "level": (.value, ["play"]),
        "seconds": (.value, ["play", "capture", "echo"]),
        "silent-from": (.value, ["play"]),
        "silent-for": (.value, ["play"]),
        "envelope": (.value, ["play"]),
        "connect": (.value, ["play", "capture", "echo"]),
        "out": (.value, ["capture"]),
        "wav": (.flag, ["capture"]),
        "close-only": (.flag, ["ports"]),
    ]

    /// Parses the arguments after the program name. Global options may appear anywhere;
    /// `--opt VALUE` and `--opt=VALUE` are both accepted; a value may start with `-`.
    static func parse(_ arguments: [String]) throws(UsageError) -> ParsedCommandLine {
        var values: [String: String] = [:]
        var flags: Set<String> = []
        var commandName: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" || argument == "help" {
                return .help
            }
            guard argument.hasPrefix("--") else {
                guard commandName == nil else {
                    throw UsageError("unexpected argument '\(argument)'")
                }
                commandName = argument
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = options[name] else { throw UsageError("unknown option --\(name)") }
            switch option.kind {
            case .flag:
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            case .value:
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count else {
                        throw UsageError("--\(name) needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                guard values[name] == nil else { throw UsageError("--\(name) given twice") }
                values[name] = value
            }
        }

        guard let commandName else { throw UsageError("no command (play, capture, ports or echo)") }
        guard ["play", "capture", "ports", "echo"].contains(commandName) else {
            throw UsageError("unknown command '\(commandName)' (play, capture, ports or echo)")
        }
        for name in values.keys.sorted() + flags.sorted() {
            if let commands = options[name]?.commands, !commands.contains(commandName) {
                throw UsageError("--\(name) does not apply to '\(commandName)'")
            }
        }

        if let server = values["server"], server.isEmpty {
            throw UsageError("--server needs a server name")
        }
        let clientName = values["name"] ?? defaultClientName
        guard !clientName.isEmpty else { throw UsageError("--name needs a client name") }

        guard let portList = values["ports"] else {
            throw UsageError("'\(commandName)' needs --ports NAME[,NAME...]")
        }
        let ports = try portNames(portList)

        let command: Command
        switch commandName {
        case "play":
            guard let signalText = values["signal"] else {
                throw UsageError("'play' needs --signal SIGNAL")
            }
            var level = defaultLevelDBFS
            if let levelText = values["level"] {
                guard let parsed = Double(levelText), parsed.isFinite else {
                    throw UsageError("bad --level '\(levelText)' (want dBFS, e.g. -6)")
                }
                level = parsed
            }
            var silence: (from: Double, length: Double)?
            switch (values["silent-from"], values["silent-for"]) {
            case (nil, nil): break
            case (let from?, let length?):
                guard let start = Double(from), start.isFinite, start >= 0 else {
                    throw UsageError("bad --silent-from '\(from)' (want seconds >= 0)")
                }
                guard let span = try seconds(length) else { break }
                silence = (start, span)
            default: throw UsageError("--silent-from and --silent-for go together")
            }
            command = .play(
                PlayOptions(
                    ports: ports, signal: try SignalSpec(parsing: signalText), levelDBFS: level,
                    seconds: try seconds(values["seconds"]),
                    connections: try connections(values["connect"], portCount: ports.count), silence: silence,
                    envelope: try values["envelope"].map(EnvelopeSpec.parse) ?? []))
        case "capture":
            guard let out = values["out"], !out.isEmpty else {
                throw UsageError("'capture' needs --out FILE")
            }
            command = .capture(
                CaptureOptions(
                    ports: ports, outputPath: out, wav: flags.contains("wav"),
                    seconds: try seconds(values["seconds"]),
                    connections: try connections(values["connect"], portCount: ports.count)))
        case "echo":
            guard ports.count == 2 else {
                throw UsageError("'echo' needs --ports IN,OUT (its input and its output), not \(ports.count) names")
            }
            func number(_ name: String, default value: Double, range: ClosedRange<Double>) throws(UsageError)
                -> Double
            {
                guard let text = values[name] else { return value }
                guard let parsed = Double(text), range.contains(parsed) else {
                    throw UsageError("bad --\(name) '\(text)' (want \(range.lowerBound)...\(range.upperBound))")
                }
                return parsed
            }
            command = .echo(
                EchoOptions(
                    ports: ports, nearPath: values["near"],
                    delayMilliseconds: try number("delay", default: 30, range: 0...500),
                    gainDB: try number("gain", default: -6, range: -120...0), seconds: try seconds(values["seconds"]),
                    connections: try connections(values["connect"], portCount: 2)))
        default:
            command = .ports(names: ports, closeOnly: flags.contains("close-only"))
        }
        return .run(
            Invocation(
                serverName: values["server"], clientName: clientName,
                rateCheck: flags.contains("rate-check"), command: command))
    }

    private static func portNames(_ list: String) throws(UsageError) -> [String] {
        let names = list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        for name in names {
            if name.isEmpty { throw UsageError("empty port name in --ports '\(list)'") }
            if name.contains(":") {
                throw UsageError(
                    "port '\(name)': give short names; JACK makes them CLIENT:\(name.split(separator: ":").last ?? "")"
                )
            }
        }
        if Set(names).count != names.count {
            throw UsageError("duplicate port name in --ports '\(list)'")
        }
        return names
    }

    private static func seconds(_ text: String?) throws(UsageError) -> Double? {
        guard let text else { return nil }
        guard let value = Double(text), value.isFinite, value > 0 else {
            throw UsageError("bad --seconds '\(text)' (want a number > 0)")
        }
        return value
    }

    private static func connections(_ text: String?, portCount: Int) throws(UsageError)
        -> [String?]
    {
        guard let text else { return [] }
        let names = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.isEmpty ? nil : String($0)
        }
        guard names.count <= portCount else {
            throw UsageError(
                "--connect names \(names.count) ports but --ports has only \(portCount)")
        }
        return names
    }
}
