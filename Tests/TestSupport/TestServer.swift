// Which JACK server the tests run against. scripts/test runs the JACK suites twice: on jackd2
// (`jackd -d dummy`, RECD_TEST_SERVER=jackd) and on PipeWire's JACK (`pw-jack`, a headless
// PipeWire, RECD_TEST_SERVER=pipewire). A test that cannot apply to one of them says so with
// `.enabled(if: ..., "why")`, which Swift Testing prints as the reason it skipped.
import Foundation

/// The JACK server behind this test run.
public enum TestServer {
    /// The servers recd is tested on.
    public enum Kind: String, Sendable {
        /// jackd2 (Debian's jackd2), libjack's own server.
        case jackd
        /// PipeWire's JACK: libjack from pipewire-jack (`pw-jack` puts it on LD_LIBRARY_PATH).
        case pipewire
    }

    /// RECD_TEST_SERVER when set (scripts/test sets it for each pass); otherwise PipeWire when
    /// PipeWire's libjack is on LD_LIBRARY_PATH (a run under `pw-jack`), else jackd.
    public static let kind: Kind = {
        let environment = ProcessInfo.processInfo.environment
        if let named = environment["RECD_TEST_SERVER"], let kind = Kind(rawValue: named) { return kind }
        return (environment["LD_LIBRARY_PATH"] ?? "").contains("pipewire") ? .pipewire : .jackd
    }()

    public static var isPipeWire: Bool { kind == .pipewire }

    /// Why tests that start, kill or restart a jackd of their own skip the PipeWire pass.
    public static let startsItsOwnJackd =
        "starts and kills a jackd of its own; on the PipeWire pass libjack is PipeWire's, which cannot reach a jackd"
}
