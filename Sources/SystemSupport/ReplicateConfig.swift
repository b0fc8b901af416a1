// Off-box replication in the config: `[replicate]`, the rclone remote that
// receives a copy of every finished segment, and how hard recd tries.

/// `[replicate]`: where finished segments are copied (with rclone) and how. A plain value.
public struct ReplicateSection: Sendable, Equatable {
    /// The rclone destination (`remote = NAME:PATH`, or an absolute local path); nil: no
    /// replication, and retention deletes without asking.
    public var remote: String?
    /// rclone's config file (`rclone_config`), which defines the remote; nil: rclone's default.
    public var rcloneConfig: String?
    /// The rclone program (`rclone`, an absolute path).
    public var rclone: String
    /// The first wait after a failed copy, doubled after each further failure
    /// (`retry_min_seconds`) up to `retryMaxSeconds` (`retry_max_seconds`).
    public var retryMinSeconds: Double
    public var retryMaxSeconds: Double
    /// Time limit of each rclone run (`timeout_seconds`): past it rclone is ended and the copy
    /// counts as failed.
    public var timeoutSeconds: Double
    /// rclone's `--bwlimit` (`bandwidth_limit`, e.g. `1M` or `08:00,512k 19:00,off`); nil: none.
    public var bandwidthLimit: String?

    public static let defaultRclone = "/usr/bin/rclone"
    public static let defaultRetryMinSeconds = 5.0
    public static let defaultRetryMaxSeconds = 600.0
    public static let defaultTimeoutSeconds = 900.0
    public static let retrySecondsRange = 0.05...86_400.0
    public static let timeoutSecondsRange = 1.0...86_400.0
    static let keys = [
        "remote", "rclone_config", "rclone", "retry_min_seconds", "retry_max_seconds", "timeout_seconds",
        "bandwidth_limit",
    ]

    public init(
        remote: String? = nil, rcloneConfig: String? = nil, rclone: String = ReplicateSection.defaultRclone,
        retryMinSeconds: Double = ReplicateSection.defaultRetryMinSeconds,
        retryMaxSeconds: Double = ReplicateSection.defaultRetryMaxSeconds,
        timeoutSeconds: Double = ReplicateSection.defaultTimeoutSeconds, bandwidthLimit: String? = nil
    ) {
        self.remote = remote
        self.rcloneConfig = rcloneConfig
        self.rclone = rclone
        self.retryMinSeconds = retryMinSeconds
        self.retryMaxSeconds = retryMaxSeconds
        self.timeoutSeconds = timeoutSeconds
        self.bandwidthLimit = bandwidthLimit
    }

    /// The wait before the next attempt after `failures` failures in a row (at least 1):
    /// `retryMinSeconds` doubled per further failure, capped at `retryMaxSeconds`.
    public func backoff(afterFailures failures: Int) -> Double {
        var wait = retryMinSeconds
        for _ in 1..<max(1, failures) where wait < retryMaxSeconds { wait *= 2 }
        return min(wait, retryMaxSeconds)
    }

    /// What `--check-config` prints about replication.
    public var summary: String {
        guard let remote else { return "replicate: off (no [replicate] remote)" }
        var text = "replicate: finished segments to \(remote) with \(rclone)"
        if let rcloneConfig { text += " (config \(rcloneConfig))" }
        text += ", retries every \(Self.format(retryMinSeconds))...\(Self.format(retryMaxSeconds)) s"
        if let bandwidthLimit { text += ", bandwidth limit \(bandwidthLimit)" }
        return text
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension ConfigInterpreter {
    /// The keys of `[replicate]`.
    static func readReplicate(_ fields: ConfigSectionFields, in issues: inout ConfigIssues) -> ReplicateSection {
        var section = ReplicateSection()
        if let field = fields["remote"] {
            section.remote = remote(field, in: &issues)
        }
        section.rcloneConfig = fields["rclone_config"]?.absolutePath(in: &issues)
        if let program = fields["rclone"]?.absolutePath(in: &issues) { section.rclone = program }
        if let value = fields["retry_min_seconds"]?.number(in: ReplicateSection.retrySecondsRange, in: &issues) {
            section.retryMinSeconds = value
        }
        if let field = fields["retry_max_seconds"],
            let value = field.number(in: ReplicateSection.retrySecondsRange, in: &issues)
        {
            if value < section.retryMinSeconds {
                field.complain(
                    "is below retry_min_seconds (\(section.retryMinSeconds)); "
                        + "the longest wait cannot be shorter than the first",
                    in: &issues)
            } else {
                section.retryMaxSeconds = value
            }
        }
        if let value = fields["timeout_seconds"]?.number(in: ReplicateSection.timeoutSecondsRange, in: &issues) {
            section.timeoutSeconds = value
        }
        if let field = fields["bandwidth_limit"] {
            let allowed = { (c: Character) in c.isLetter || c.isNumber || ".:,-|".contains(c) || c == " " }
            if !field.value.isEmpty, field.value.count <= 200, field.value.allSatisfy(allowed) {
                section.bandwidthLimit = field.value
            } else {
                field.complain(
                    "is not an rclone --bwlimit value; write e.g. 1M, 512k or \"08:00,512k 19:00,off\"", in: &issues)
            }
        }
        return section
    }

    /// `NAME:PATH` of an rclone remote (NAME from rclone's config: letters, digits, `_-. `),
    /// or an absolute local path.
    private static func remote(_ field: ConfigField, in issues: inout ConfigIssues) -> String? {
        let value = field.value
        if value.hasPrefix("/") { return value.contains("\0") ? nil : value }
        if let colon = value.firstIndex(of: ":") {
            let name = value[..<colon]
            let nameOK =
                !name.isEmpty && !name.hasPrefix("-")
                && name.allSatisfy { $0.isLetter || $0.isNumber || "_-. ".contains($0) }
            if nameOK, !value.contains("\n") { return value }
        }
        field.complain(
            "is not an rclone remote; write NAME:PATH with NAME a remote of rclone_config (`rclone config` makes one), "
                + "or an absolute local path",
            in: &issues)
        return nil
    }
}
