// An example application with its own JACK client under an audio session: it records its in_1,
// fed by recd from the session's input route, to a raw file of 32-bit floats. recd gives it
// zeros until its record permission is granted (docs/audiosession.md).
//   audiosession-record --out FILE [--seconds N] [--app APP] [--client NAME] [--category record|playAndRecord]
// Prints one line per step and per notification (tests read them).
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
let app = options["--app"] ?? "recorder"
let clientName = options["--client"] ?? "\(app)-app"
let seconds = Double(options["--seconds"] ?? "3") ?? 3
let category = AudioSession.Category(rawValue: options["--category"] ?? "record") ?? .record
guard let outPath = options["--out"], let file = fopen(outPath, "wb") else {
    say("error: give --out FILE, a file this program may create")
    exit(2)
}

let capture = UnsafeMutablePointer<Capture>.allocate(capacity: 1)
capture.initialize(to: Capture())

var status = jack_status_t(rawValue: 0)
guard let client = recd_jack_client_open(clientName, nil, &status) else {
    say("error: cannot open the JACK client \(clientName) (is the JACK server running?)")
    exit(1)
}
capture.pointee.port = jack_port_register(client, "in_1", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
capture.pointee.ring = jack_ringbuffer_create(Int(jack_get_sample_rate(client)) * 4 * 4)
jack_set_process_callback(client, captureInput, capture)
guard jack_activate(client) == 0 else {
    say("error: the JACK server refused to activate \(clientName)")
    exit(1)
}
let port = "\(clientName):in_1"
say("client \(port)")

let session = AudioSession(app: app, microphoneUsageDescription: "the audiosession-record example records its input")
session.addObserver { notification in say(notification.description) }
@Sendable func step(_ what: String, _ body: () throws(AudioSessionError) -> Void) {
    do {
        try body()
        say(what)
    } catch {
        say("error: \(what): \(error)")
    }
}
step("category \(category.rawValue)") { () throws(AudioSessionError) in try session.setCategory(category) }
step("attached") { () throws(AudioSessionError) in _ = try session.attach(jackClient: clientName, capturePorts: [port])
}
step("active") { () throws(AudioSessionError) in try session.setActive(true) }
// Not waited for: until someone grants it, recd feeds zeros.
session.requestRecordPermission { granted in say("permission \(granted ? "granted" : "denied")") }

var chunk = [CChar](repeating: 0, count: 65536)
var written = 0
let start = jack_get_time()
while Double(jack_get_time() - start) / 1e6 < seconds {
    let count = jack_ringbuffer_read(capture.pointee.ring, &chunk, chunk.count)
    if count > 0 { written += fwrite(chunk, 1, count, file) } else { usleep(10_000) }
}
jack_deactivate(client)
let rest = jack_ringbuffer_read(capture.pointee.ring, &chunk, chunk.count)
written += fwrite(chunk, 1, rest, file)
fclose(file)
say("wrote \(written / 4) frames to \(outPath)")
session.close()
jack_client_close(client)
