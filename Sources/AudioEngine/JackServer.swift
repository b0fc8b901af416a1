// Which JACK implementation serves recd, and which server of it a client reaches. The library
// decides both: the libjack the process loaded is jackd2's, or PipeWire's (pipewire-jack: what
// `pw-jack` puts on LD_LIBRARY_PATH, and what Debian 13, Ubuntu and Fedora install as "JACK").
// docs/jack-servers.md lists how the two differ and how recd handles each difference.

internal import CJack

#if canImport(Glibc)
    import Glibc  // getenv
#endif

/// The JACK implementation behind libjack, as `jack_get_version_string` names it. Any thread.
public struct JackImplementation: Equatable, Sendable {
    public enum Kind: String, Sendable {
        /// JACK's own server (jackd2: `jackd`, `jackdbus`).
        case jackd
        /// PipeWire's JACK: every JACK client is a PipeWire node.
        case pipewire
    }

    public var kind: Kind
    /// libjack's own version text ("1.9.21", "3.0.0.0 (using PipeWire 0.3.65)").
    public var version: String

    /// Read from `version` (PipeWire's libjack names itself there).
    public init(version: String) {
        self.version = version
        kind = version.contains("PipeWire") ? .pipewire : .jackd
    }

    /// The libjack this process loaded.
    public static let loaded = JackImplementation(
        version: jack_get_version_string().map { String(cString: $0) } ?? "unknown")

    /// The server a client opened with server name `configured` (`[jack] server`; nil: the
    /// default) reaches, given `environment`. jackd: the configured name, else
    /// JACK_DEFAULT_SERVER, else "default". PipeWire ignores JACK_DEFAULT_SERVER: the name is a
    /// PipeWire remote (a socket in PIPEWIRE_RUNTIME_DIR or XDG_RUNTIME_DIR), PIPEWIRE_REMOTE
    /// wins over the configured name (measured on 0.3.65), and "default" or none is
    /// "pipewire-0". Pure.
    public func serverName(configured: String?, environment: (String) -> String?) -> String {
        switch kind {
        case .jackd:
            return configured ?? environment("JACK_DEFAULT_SERVER") ?? "default"
        case .pipewire:
            if let remote = environment("PIPEWIRE_REMOTE"), !remote.isEmpty { return remote }
            if let configured, configured != "default" { return configured }
            return "pipewire-0"
        }
    }

    /// `serverName(configured:environment:)` with this process's environment.
    public func serverName(configured: String?) -> String {
        serverName(configured: configured) { name in getenv(name).map { String(cString: $0) } }
    }
}
