/// Where a JACK port's audio comes from (for a playback port: goes to): a client of this
/// machine's graph, a netjack2 satellite's channel, or an RTP stream PipeWire receives.
///
/// netjack2's netmanager (`jack_load netmanager` on the logger's jackd) opens, inside jackd, one
/// client per satellite that joins, named as the satellite names itself (`jackd -d net -n NAME`;
/// the satellite's hostname by default), with the ports `from_slave_1...` (what the satellite
/// sends: its playback ports) and `to_slave_1...` (what it receives). Nothing else marks them on
/// jackd2 1.9.21: no alias, no metadata, no process of their own (docs/network-audio.md), so
/// those port names are the mark. A JACK client of this machine that named its ports so would be
/// shown as a satellite: that is all JACK lets one tell.
///
/// An RTP stream is not told by its name: PipeWire's `module-rtp-source` names its node (and so
/// the JACK client) after the SDP's session name, like any application's. Only the node's
/// properties say it (`rtp.session`, `rtp.origin`), which libjack does not show; the daemon reads
/// them from PipeWire (`pw-dump`) and makes such a client's origin `.rtp` (`PortOrigin(jackPort:)`
/// never does).
public enum PortOrigin: Hashable, Sendable {
    /// A client of this JACK server (a card's `system`, an application): `client` is its name.
    case local(client: String)
    /// A netjack2 satellite's channel: `peer` is the satellite's name (its client here).
    case netjack2(peer: String)
    /// An RTP stream PipeWire's rtp-source receives: `session` is the SDP's session name (`s=`),
    /// `address` the sender's (the SDP origin's, `o=`; nil when the sender announced none, 0.0.0.0),
    /// `client` the JACK client its node shows as.
    case rtp(session: String, address: String?, client: String)

    /// The origin of the JACK port named `fullName` (`client:port`).
    public init(jackPort fullName: String) {
        guard let colon = fullName.firstIndex(of: ":") else {
            self = .local(client: fullName)
            return
        }
        let client = String(fullName[..<colon])
        let port = fullName[fullName.index(after: colon)...]
        self = Self.isNetjack2Channel(port) ? .netjack2(peer: client) : .local(client: client)
    }

    /// The origin's kind, as the wire names it: `local`, `netjack2` or `rtp`.
    public var kind: String {
        switch self {
        case .local: "local"
        case .netjack2: "netjack2"
        case .rtp: "rtp"
        }
    }

    /// The JACK client behind it: the local client's name, the satellite's, or the RTP node's.
    public var client: String {
        switch self {
        case .local(let client), .netjack2(peer: let client), .rtp(_, _, let client): client
        }
    }

    /// `from_slave_N` or `to_slave_N`, N a positive number: netmanager's names.
    static func isNetjack2Channel(_ port: Substring) -> Bool {
        for prefix in ["from_slave_", "to_slave_"] where port.hasPrefix(prefix) {
            let number = port.dropFirst(prefix.count)
            return !number.isEmpty && number.allSatisfy(\.isASCII) && number.allSatisfy(\.isNumber)
                && number.first != "0"
        }
        return false
    }
}
