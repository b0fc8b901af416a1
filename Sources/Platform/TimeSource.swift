// Who keeps the wall clock synchronised, as that daemon says itself: chrony (`chronyc -n -c
// tracking`) or systemd-timesyncd (its `synchronized` flag file, `timedatectl`). The kernel's
// own view (adjtimex) is `ClockSynchronization`; this names the source behind it.

/// The time source a segment records (CLOCK_SOURCE) and `status.clock` shows: one line, e.g.
/// `chrony: 192.0.2.1, stratum 2, offset +0.000012 s` (the clock ahead of chrony's time), `chrony:
/// local clock (no outside time), stratum 10, offset +0.000000 s`, `chrony: no
/// reference`, `systemd-timesyncd: ntp.example.net`, or `none`. A plain value: any thread.
public struct TimeSource: Hashable, Sendable, CustomStringConvertible {
    /// The line as recorded.
    public var description: String

    public init(_ description: String) { self.description = description }

    /// No daemon answered: nothing recd can see keeps the clock.
    public static let none = TimeSource("none")

    /// Where the programs and files are; tests point them elsewhere.
    public struct Locations: Sendable {
        public var chronyc: String
        /// Arguments before `-n -c tracking` (a test's `-h` for its own chronyd's socket).
        public var chronycArguments: [String]
        public var timedatectl: String
        public var timesyncdFlag: String

        public init(
            chronyc: String = "/usr/bin/chronyc", chronycArguments: [String] = [],
            timedatectl: String = "/usr/bin/timedatectl",
            timesyncdFlag: String = "/run/systemd/timesync/synchronized"
        ) {
            self.chronyc = chronyc
            self.chronycArguments = chronycArguments
            self.timedatectl = timedatectl
            self.timesyncdFlag = timesyncdFlag
        }
    }

    /// The longest one question may take (each program's time limit).
    public static let queryTimeLimit = 2.0

    /// Asks chrony, then systemd-timesyncd. Runs programs and waits for them (up to
    /// `queryTimeLimit` each): a worker thread's call, never the control or archiver thread's.
    public static func query(_ locations: Locations = Locations()) -> TimeSource {
        if FileSystem.exists(locations.chronyc),
            let run = try? ChildProcess.runCapturingOutput(
                path: locations.chronyc, arguments: locations.chronycArguments + ["-n", "-c", "tracking"],
                environment: [:], timeLimit: queryTimeLimit, maximumOutputBytes: 4096),
            run.outcome.succeeded,
            let source = chrony(tracking: String(decoding: run.output, as: UTF8.self))
        {
            return source
        }
        // timesyncd creates the flag file when it first synchronised the clock (systemd ≥ 239).
        guard FileSystem.exists(locations.timesyncdFlag) else { return .none }
        var server = ""
        if FileSystem.exists(locations.timedatectl),
            let run = try? ChildProcess.runCapturingOutput(
                path: locations.timedatectl, arguments: ["show-timesync", "--property=ServerName", "--value"],
                environment: [:], timeLimit: queryTimeLimit, maximumOutputBytes: 1024),
            run.outcome.succeeded
        {
            server = String(decoding: run.output, as: UTF8.self).trimmingSpaces
        }
        return timesyncd(server: server)
    }

    /// The source `chronyc -n -c tracking` describes (its CSV line: reference ID, reference
    /// name or address, stratum, reference time, system time, last offset, ... leap status);
    /// nil when the text is not that line. A chronyd without a reference (no server reached yet,
    /// or none configured) reports ID 0, stratum 0 and "Not synchronised": "chrony: no
    /// reference". The offset recorded is the system clock's from chrony's time, positive when
    /// the clock is ahead (chronyc's CSV "system time" is the correction, the other sign: its
    /// human form says "fast" for a negative one).
    public static func chrony(tracking text: String) -> TimeSource? {
        let fields = text.trimmingSpaces.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        // A correction beyond a day is no clock chrony keeps (and would not fit the text below).
        guard fields.count >= 14, let referenceID = UInt32(fields[0], radix: 16), let stratum = Int(fields[2]),
            let correction = Double(fields[4]), correction.isFinite, correction.magnitude < 86_400
        else { return nil }
        if referenceID == 0 || stratum == 0 || fields[13] == "Not synchronised" {
            return TimeSource("chrony: no reference")
        }
        // 127.127.1.1 is chrony's own `local stratum N` reference: no outside time.
        let name = referenceID == 0x7F7F_0101 ? "local clock (no outside time)" : fields[1]
        let offset = -correction
        let micros = Int((offset.magnitude * 1e6).rounded())
        let fraction = String(micros % 1_000_000)
        let text = "\(micros / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
        let sign = offset < 0 && micros > 0 ? "-" : "+"
        return TimeSource("chrony: \(name), stratum \(stratum), offset \(sign)\(text) s")
    }

    /// systemd-timesyncd synchronised the clock, from `server` (empty when not known).
    public static func timesyncd(server: String) -> TimeSource {
        TimeSource(server.isEmpty ? "systemd-timesyncd" : "systemd-timesyncd: \(server)")
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and line ends.
    fileprivate var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
