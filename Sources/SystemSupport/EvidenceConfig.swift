// Evidence for third parties in the config: `[evidence]`, the RFC 3161 time-stamping
// authorities that stamp the archive's chain heads (docs/archive-proof.md, "Trusted time-stamps").

/// `[evidence]`: which TSAs stamp the chains, what recd trusts of them, how often. A plain value.
public struct EvidenceSection: Sendable, Equatable {
    /// `tsa_url`: the TSAs, tried in order (http:// or https://); empty: no time-stamps.
    public var tsaURLs: [String]
    /// `tsa_ca_file`: the roots a token's signer must chain to (and an https TSA's server
    /// certificate); nil: the system's.
    public var tsaCAFile: String?
    /// `tsa_certificate`: only tokens signed by this certificate are taken: a PEM file (its
    /// fingerprint is read at start) or a SHA-256 fingerprint; nil: any the roots trust.
    public var tsaCertificate: String?
    /// `tsa_interval_seconds`: a chain's advancing head is stamped at most this often (and at
    /// every day's close).
    public var tsaIntervalSeconds: Double
    /// `tsa_alarm_minutes`: a chain head waiting this long for its stamp turns health to alarm.
    public var tsaAlarmMinutes: Double

    public static let defaultIntervalSeconds = 600.0
    public static let defaultAlarmMinutes = 60.0
    public static let intervalSecondsRange = 1.0...86_400.0
    public static let alarmMinutesRange = 1.0...10_080.0
    /// At most this many TSAs: each is a wait of up to a request's time limit per attempt.
    public static let maxURLs = 8
    static let keys = ["tsa_url", "tsa_ca_file", "tsa_certificate", "tsa_interval_seconds", "tsa_alarm_minutes"]

    public init(
        tsaURLs: [String] = [], tsaCAFile: String? = nil, tsaCertificate: String? = nil,
        tsaIntervalSeconds: Double = EvidenceSection.defaultIntervalSeconds,
        tsaAlarmMinutes: Double = EvidenceSection.defaultAlarmMinutes
    ) {
        self.tsaURLs = tsaURLs
        self.tsaCAFile = tsaCAFile
        self.tsaCertificate = tsaCertificate
        self.tsaIntervalSeconds = tsaIntervalSeconds
        self.tsaAlarmMinutes = tsaAlarmMinutes
    }

    /// What `--check-config` prints about time-stamps.
    public var summary: String {
        guard !tsaURLs.isEmpty else { return "evidence: no time-stamps (no [evidence] tsa_url)" }
        var text = "evidence: chain heads time-stamped by \(tsaURLs.joined(separator: ", "))"
        text += " at most every \(Int(tsaIntervalSeconds)) s, alarm after \(Int(tsaAlarmMinutes)) min"
        if let tsaCAFile { text += ", roots \(tsaCAFile)" }
        if let tsaCertificate { text += ", pinned to \(tsaCertificate)" }
        return text
    }
}

extension ConfigInterpreter {
    /// The keys of `[evidence]`.
    static func readEvidence(_ fields: ConfigSectionFields, in issues: inout ConfigIssues) -> EvidenceSection {
        var section = EvidenceSection()
        if let field = fields["tsa_url"], let items = field.list(in: &issues) {
            let good = items.filter { url in
                let lower = url.lowercased()
                return (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && url.count <= 2048
                    && url.count > "https://".count && !url.contains(where: { $0.isWhitespace || $0 == "\0" })
            }
            if good.count != items.count {
                field.complain(
                    "is not a list of http:// or https:// URLs; write e.g. https://tsa.example.net/tsr, "
                        + "http://backup.example.org/ts", in: &issues)
            } else if items.isEmpty || items.count > EvidenceSection.maxURLs {
                field.complain("names \(items.count) TSAs; give 1 to \(EvidenceSection.maxURLs)", in: &issues)
            } else {
                section.tsaURLs = items
            }
        }
        section.tsaCAFile = fields["tsa_ca_file"]?.absolutePath(in: &issues)
        if let field = fields["tsa_certificate"] {
            let value = field.value
            let fingerprint = value.filter { $0 != ":" }
            if value.hasPrefix("/") || (fingerprint.count == 64 && fingerprint.allSatisfy(\.isHexDigit)) {
                section.tsaCertificate = value.hasPrefix("/") ? field.absolutePath(in: &issues) : value
            } else {
                field.complain(
                    "is neither an absolute path to the TSA's PEM certificate nor its SHA-256 fingerprint "
                        + "(64 hex digits, colons allowed: openssl x509 -noout -fingerprint -sha256 -in CERT)",
                    in: &issues)
            }
        }
        if let value = fields["tsa_interval_seconds"]?.number(in: EvidenceSection.intervalSecondsRange, in: &issues) {
            section.tsaIntervalSeconds = value
        }
        if let value = fields["tsa_alarm_minutes"]?.number(in: EvidenceSection.alarmMinutesRange, in: &issues) {
            section.tsaAlarmMinutes = value
        }
        for key in ["tsa_ca_file", "tsa_certificate", "tsa_interval_seconds", "tsa_alarm_minutes"]
        where fields[key] != nil && section.tsaURLs.isEmpty && issues.isEmpty {
            fields[key]?.complain("has no effect without tsa_url; name the TSA to ask", in: &issues)
        }
        return section
    }
}
