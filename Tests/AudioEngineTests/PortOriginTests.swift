// Where a JACK port's audio comes from, read from its name: netjack2's netmanager names a
// satellite's client as the satellite names itself and its ports from_slave_N / to_slave_N
// (seen on jackd2 1.9.21; NetworkAudioTests checks it on a real satellite).
import AudioEngine
import Testing

@Suite struct PortOriginTests {
    @Test(
        "netmanager's port names are a netjack2 peer's; every other name is a local client's",
        arguments: [
            ("studio2:from_slave_1", PortOrigin.netjack2(peer: "studio2")),
            ("studio2:from_slave_12", .netjack2(peer: "studio2")),
            ("studio2:to_slave_2", .netjack2(peer: "studio2")),
            ("studio-b.local:from_slave_1", .netjack2(peer: "studio-b.local")),
            ("system:capture_1", .local(client: "system")),
            ("deck:out_1", .local(client: "deck")),
            ("studio2:from_slave_", .local(client: "studio2")),
            ("studio2:from_slave_0", .local(client: "studio2")),
            ("studio2:from_slave_1x", .local(client: "studio2")),
            ("studio2:my_from_slave_1", .local(client: "studio2")),
            ("PulseAudio JACK Sink:front-left", .local(client: "PulseAudio JACK Sink")),
            ("noclient", .local(client: "noclient")),
        ])
    func origin(port: String, expected: PortOrigin) {
        #expect(PortOrigin(jackPort: port) == expected)
    }

    @Test func kindAndClient() {
        #expect(PortOrigin.netjack2(peer: "studio2").kind == "netjack2")
        #expect(PortOrigin.netjack2(peer: "studio2").client == "studio2")
        #expect(PortOrigin.local(client: "system").kind == "local")
        #expect(PortOrigin.local(client: "system").client == "system")
        // Only the daemon makes an RTP origin (from PipeWire's node properties), never a name.
        let rtp = PortOrigin.rtp(session: "Studio 2", address: "10.0.0.2", client: "studio2")
        #expect(rtp.kind == "rtp" && rtp.client == "studio2")
        #expect(PortOrigin(jackPort: "studio2:output_FL") == .local(client: "studio2"))
    }
}
