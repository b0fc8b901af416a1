// An example application with its own JACK client under an audio session: a 440 Hz tone on
// out_1 that reaches the speakers only through recd, under the policy (docs/audiosession.md).
//   audiosession-tone [--app APP] [--client NAME] [--frequency HZ] [--options a,b] [--activate-after S]
// Prints one line per step and per notification (tests read them); resumes when an interruption
// ends with shouldResume (as an AVAudioSession app should); plays until SIGTERM/SIGINT.
import AudioSession
import CJack
import Glibc

/// One line of output, flushed at once (a test reads it while the program runs).
func say(_ line: String) {
    print(line)
    fflush(nil)
}
var options: [String: String] = [:]
var words = CommandLine.arguments.dropFirst().makeIterator()
while let word = words.next() { options[word] = words.next() }
let app = options["--app"] ?? "tone"
let clientName = options["--client"] ?? "\(app)-app"
let frequency = Float(options["--frequency"] ?? "440") ?? 440
let activateAfter = Double(options["--activate-after"] ?? "0") ?? 0
let categoryOptions = Set(
    (options["--options"] ?? "").split(separator: ",").compactMap { AudioSession.CategoryOption(rawValue: String($0)) })

let tone = UnsafeMutablePointer<Tone>.allocate(capacity: 1)
tone.initialize(to: Tone())

var status = jack_status_t(rawValue: 0)
guard let client = recd_jack_client_open(clientName, nil, &status) else {
    say(
        "error: cannot open the JACK client \(clientName) (is the JACK server running? status 0x\(String(status.rawValue, radix: 16)))"
    )
    exit(1)
}
tone.pointee.port = jack_port_register(client, "out_1", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
tone.pointee.step = 2 * Float.pi * frequency / Float(jack_get_sample_rate(client))
jack_set_process_callback(client, renderTone, tone)
guard jack_activate(client) == 0 else {
    say("error: the JACK server refused to activate \(clientName)")
    exit(1)
}
let port = "\(clientName):out_1"
say("client \(port)")

let session = AudioSession(app: app)
@Sendable func step(_ what: String, _ body: () throws(AudioSessionError) -> Void) {
    do {
        try body()
        say(what)
    } catch {
        say("error: \(what): \(error)")
    }
}
session.addObserver { notification in
    say(notification.description)
    if case .interruption(.ended, let options, _) = notification, options.contains(.shouldResume) {
        step("resumed") { () throws(AudioSessionError) in try session.setActive(true) }
    }
}
step("category playback") { () throws(AudioSessionError) in try session.setCategory(.playback, options: categoryOptions)
}
step("attached") { () throws(AudioSessionError) in _ = try session.attach(jackClient: clientName, playPorts: [port]) }
usleep(UInt32(activateAfter * 1_000_000))
step("active") { () throws(AudioSessionError) in try session.setActive(true) }
while true { pause() }
