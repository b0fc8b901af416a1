// An example application with its own JACK client under an audio session: a 440 Hz tone on
// out_1 that reaches the speakers only through recd, under the policy (docs/audiosession.md).
//   audiosession-tone [--app APP] [--client NAME] [--frequency HZ] [--options a,b] [--no-activate]
// Prints one line per step and per notification (tests read them); plays until SIGTERM/SIGINT.
import AudioSession
import CJack
import Glibc

/// One line of output, flushed at once (a test reads it while the program runs).
func say(_ line: String) {
    print(line)
    fflush(nil)
}
var options: [String: String] = [:]
var flags: Set<String> = []
var words = CommandLine.arguments.dropFirst().makeIterator()
while let word = words.next() {
    if word == "--no-activate" { flags.insert(word) } else if let value = words.next() { options[word] = value }
}
let app = options["--app"] ?? "tone"
let clientName = options["--client"] ?? "\(app)-app"
let frequency = Float(options["--frequency"] ?? "440") ?? 440
let categoryOptions = Set((options["--options"] ?? "").split(separator: ",").compactMap { AudioSession.CategoryOption(rawValue: String($0)) })

/// The process thread's state: the port and the oscillator (plain memory, no Swift objects).
struct Tone {
    var port: OpaquePointer?
    var phase: Float = 0
    var step: Float = 0
}
let tone = UnsafeMutablePointer<Tone>.allocate(capacity: 1)
tone.initialize(to: Tone())

var status = jack_status_t(rawValue: 0)
guard let client = recd_jack_client_open(clientName, nil, &status) else {
    say("error: cannot open the JACK client \(clientName) (is the JACK server running? status 0x\(String(status.rawValue, radix: 16)))")
    exit(1)
}
tone.pointee.port = jack_port_register(client, "out_1", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
tone.pointee.step = 2 * Float.pi * frequency / Float(jack_get_sample_rate(client))
jack_set_process_callback(client, { frames, argument in
    let tone = argument!.assumingMemoryBound(to: Tone.self)
    let out = jack_port_get_buffer(tone.pointee.port, frames)!.assumingMemoryBound(to: Float.self)
    for i in 0..<Int(frames) {
        out[i] = 0.5 * sinf(tone.pointee.phase)
        tone.pointee.phase += tone.pointee.step
        if tone.pointee.phase > 2 * Float.pi { tone.pointee.phase -= 2 * Float.pi }
    }
    return 0
}, tone)
guard jack_activate(client) == 0 else {
    say("error: the JACK server refused to activate \(clientName)")
    exit(1)
}
let port = "\(clientName):out_1"
say("client \(port)")

let session = AudioSession(app: app)
session.addObserver { notification in say(notification.description) }
func step(_ what: String, _ body: () throws(AudioSessionError) -> Void) {
    do {
        try body()
        say(what)
    } catch {
        say("error: \(what): \(error)")
    }
}
step("category playback") { () throws(AudioSessionError) in try session.setCategory(.playback, options: categoryOptions) }
step("attached") { () throws(AudioSessionError) in _ = try session.attach(jackClient: clientName, playPorts: [port]) }
if !flags.contains("--no-activate") { step("active") { () throws(AudioSessionError) in try session.setActive(true) } }
while true { pause() }
