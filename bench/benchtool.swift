// bench/benchtool: the small measuring instruments bench/run needs, in one executable.
// Built by bench/run with swiftc (not part of the package: nothing here ships).
//
//   benchtool xruns FILE            JACK client that counts the server's xrun notifications;
//                                   rewrites FILE with the count (every 50 ms when it changed)
//                                   until SIGTERM/SIGINT. It has no process callback.
//   benchtool latency SOCKET COUNT  COUNT `status` round trips over one control connection;
//                                   prints "median_ms p99_ms max_ms count".
//   benchtool topcm RAW CHANNELS PREFIX
//                                   float32 LE interleaved → raw signed 24-bit LE PCM files of at
//                                   most 8 channels each (PREFIX-1.s24 with its channel count in
//                                   PREFIX-1.channels, ...), converted as recd converts (clamp to
//                                   [-1, 1-2^-23], scale, round), so the flac CLI encodes exactly
//                                   what recd encodes.
//   benchtool writer DIR FILES BYTES_PER_S [CPU_MS_PER_S]
//                                   writes as recd's archivers do, with no JACK and no encoding:
//                                   FILES files in DIR appended 20 times a second (BYTES_PER_S in
//                                   all) and one fdatasync round a second, until SIGTERM/SIGINT;
//                                   with CPU_MS_PER_S, also spends that much CPU a second in
//                                   user space, a twentieth before each round of writes (the
//                                   encoding's share of the archivers' load).
import CJack
import Glibc
import Synchronization

@main
struct BenchTool {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "xruns" where arguments.count == 2: xruns(file: arguments[1])
        case "latency" where arguments.count == 3: latency(socketPath: arguments[1], count: Int(arguments[2]) ?? 1000)
        case "idle-client" where arguments.count == 4:
            idleClient(name: arguments[1], ports: Int(arguments[2]) ?? 0, connectPattern: arguments[3])
        case "topcm" where arguments.count == 4:
            toPCM(raw: arguments[1], channels: Int(arguments[2]) ?? 0, prefix: arguments[3])
        case "writer" where arguments.count == 4 || arguments.count == 5:
            writer(directory: arguments[1], files: Int(arguments[2]) ?? 0, bytesPerSecond: Int(arguments[3]) ?? 0,
                   cpuMillisecondsPerSecond: arguments.count == 5 ? Double(arguments[4]) ?? 0 : 0)
        default:
            fputs("usage: benchtool xruns FILE | latency SOCKET COUNT | topcm RAW CHANNELS PREFIX | idle-client NAME PORTS PATTERN | writer DIR FILES BYTES_PER_S [CPU_MS_PER_S]\n", stderr)
            exit(2)
        }
    }
}

// MARK: - xruns

/// Written by libjack's notification thread, read by the main loop.
let xrunCount = Atomic<Int>(0)
let stopRequested = Atomic<Bool>(false)

func xruns(file: String) {
    var status = jack_status_t(0)
    guard let client = recd_jack_client_open("bench-xruns", nil, &status) else {
        fputs("benchtool xruns: cannot open a JACK client (status 0x\(String(status.rawValue, radix: 16)))\n", stderr)
        exit(1)
    }
    jack_set_xrun_callback(
        client,
        { _ in
            xrunCount.add(1, ordering: .relaxed)
            return 0
        }, nil)
    // Notifications (xruns among them) reach only active clients. Without a process callback
    // it does no work in the cycle; the server logs no xrun against it in practice.
    guard jack_activate(client) == 0 else {
        fputs("benchtool xruns: jack_activate failed\n", stderr)
        exit(1)
    }
    signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
    let temporary = file + ".tmp"
    var last = -1
    while !stopRequested.load(ordering: .relaxed) {
        let now = xrunCount.load(ordering: .relaxed)
        if now != last {
            let text = "\(now)\n"
            if let handle = fopen(temporary, "w") {
                fputs(text, handle)
                fclose(handle)
                rename(temporary, file)
            }
            last = now
        }
        usleep(50_000)
    }
    jack_deactivate(client)
    jack_client_close(client)
}

// MARK: - idle-client

/// The least a JACK client with PORTS input ports does: registers them, connects them to the
/// ports matching PATTERN (in order), and answers every period with a process callback that
/// returns at once. Runs until SIGTERM. bench/run's idle rows put recd beside it (and beside
/// jack_simple_client, which has two output ports and computes a sine).
func idleClient(name: String, ports: Int, connectPattern: String) {
    var status = jack_status_t(0)
    guard ports > 0, let client = recd_jack_client_open(name, nil, &status) else {
        fputs("benchtool idle-client: cannot open a JACK client (status 0x\(String(status.rawValue, radix: 16)))\n", stderr)
        exit(1)
    }
    var registered: [OpaquePointer] = []
    for index in 1...ports {
        guard let port = jack_port_register(client, "in_\(index)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue), 0)
        else {
            fputs("benchtool idle-client: cannot register port \(index)\n", stderr)
            exit(1)
        }
        registered.append(port)
    }
    jack_set_process_callback(client, { _, _ in 0 }, nil)
    guard jack_activate(client) == 0 else {
        fputs("benchtool idle-client: jack_activate failed\n", stderr)
        exit(1)
    }
    if let found = jack_get_ports(client, connectPattern, nil, UInt(JackPortIsOutput.rawValue)) {
        var index = 0
        while let source = found[index], index < registered.count {
            jack_connect(client, source, jack_port_name(registered[index]))
            index += 1
        }
        jack_free(found)
    }
    signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
    print("ready")
    fflush(stdout)
    while !stopRequested.load(ordering: .relaxed) { usleep(100_000) }
    jack_deactivate(client)
    jack_client_close(client)
}

// MARK: - writer

func writer(directory: String, files: Int, bytesPerSecond: Int, cpuMillisecondsPerSecond: Double) {
    guard files > 0, bytesPerSecond > 0 else { fputs("writer: FILES and BYTES_PER_S must be positive\n", stderr); exit(2) }
    signal(SIGTERM) { _ in stopRequested.store(true, ordering: .relaxed) }
    signal(SIGINT) { _ in stopRequested.store(true, ordering: .relaxed) }
    let descriptors = (1...files).map { open("\(directory)/\($0).dat", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    guard descriptors.allSatisfy({ $0 >= 0 }) else { perror("writer: open"); exit(1) }
    // Incompressible bytes, as a FLAC stream's are; one chunk a file a tick.
    var chunk = [UInt8](repeating: 0, count: max(1, bytesPerSecond / 20 / files))
    for index in chunk.indices { chunk[index] = UInt8.random(in: 0...255) }
    var tick = 0
    var next = clockSeconds(CLOCK_MONOTONIC)
    var spin: UInt64 = 0
    while !stopRequested.load(ordering: .relaxed) {
        let burnUntil = clockSeconds(CLOCK_THREAD_CPUTIME_ID) + cpuMillisecondsPerSecond / 20 / 1000
        while clockSeconds(CLOCK_THREAD_CPUTIME_ID) < burnUntil { for _ in 0..<1000 { spin = spin &* 6364136223846793005 &+ 1 } }
        for fd in descriptors {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0 { perror("writer: write"); exit(1) }
        }
        tick += 1
        if tick % 20 == 0 { for fd in descriptors { fdatasync(fd) } }
        next += 0.05
        let wait = next - clockSeconds(CLOCK_MONOTONIC)
        if wait > 0 { usleep(UInt32(wait * 1e6)) }
    }
    for fd in descriptors { close(fd) }
    if spin == 42 { print("") }   // keeps the spin loop's work
}

// MARK: - latency

/// A clock's time in seconds: CLOCK_MONOTONIC for wall time, CLOCK_THREAD_CPUTIME_ID for the
/// calling thread's CPU time.
func clockSeconds(_ clock: clockid_t) -> Double {
    var now = timespec()
    clock_gettime(clock, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func latency(socketPath: String, count: Int) {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let pathBytes = Array(socketPath.utf8)
    guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
        fputs("benchtool latency: socket path too long\n", stderr)
        exit(2)
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: pathBytes)
        raw[pathBytes.count] = 0
    }
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    guard connected == 0 else {
        fputs("benchtool latency: cannot connect to \(socketPath): \(String(cString: strerror(errno)))\n", stderr)
        exit(1)
    }
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    var samples: [Double] = []
    samples.reserveCapacity(count)
    for id in 0..<count {
        let request = Array("{\"id\":\(id),\"op\":\"status\"}\n".utf8)
        let started = clockSeconds(CLOCK_MONOTONIC)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { fputs("benchtool latency: send failed\n", stderr); exit(1) }
            sent += n
        }
        // One reply line per request: read until a newline arrives.
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                guard line.contains("\"ok\":true") else {
                    fputs("benchtool latency: request \(id) failed: \(line.prefix(200))\n", stderr)
                    exit(1)
                }
                break
            }
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { fputs("benchtool latency: connection closed\n", stderr); exit(1) }
            pending += chunk[..<n]
        }
        samples.append(clockSeconds(CLOCK_MONOTONIC) - started)
    }
    close(fd)
    samples.sort()
    func percentile(_ p: Double) -> Double {
        samples[min(samples.count - 1, Int((p * Double(samples.count)).rounded(.up)) - 1)] * 1000
    }
    let median = (samples[(samples.count - 1) / 2] + samples[samples.count / 2]) / 2 * 1000
    print("\(fixed3(median)) \(fixed3(percentile(0.99))) \(fixed3(samples.last! * 1000)) \(samples.count)")
}

/// "12.345": three decimals without Foundation.
func fixed3(_ value: Double) -> String {
    let thousandths = Int((value * 1000).rounded())
    let fraction = String(thousandths % 1000)
    return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

// MARK: - topcm

func toPCM(raw: String, channels: Int, prefix: String) {
    guard channels > 0, let input = fopen(raw, "rb") else {
        fputs("benchtool topcm: cannot read \(raw) or bad channel count\n", stderr)
        exit(1)
    }
    defer { fclose(input) }
    // Groups of at most 8 channels, like recd's files (FLAC holds at most 8).
    var groups: [Range<Int>] = []
    var start = 0
    while start < channels {
        groups.append(start..<min(start + 8, channels))
        start += 8
    }
    var outputs: [UnsafeMutablePointer<FILE>] = []
    for (index, group) in groups.enumerated() {
        guard let file = fopen("\(prefix)-\(index + 1).s24", "wb"),
            let count = fopen("\(prefix)-\(index + 1).channels", "w")
        else {
            fputs("benchtool topcm: cannot write \(prefix)-\(index + 1).s24\n", stderr)
            exit(1)
        }
        fputs("\(group.count)\n", count)
        fclose(count)
        outputs.append(file)
    }
    let framesPerChunk = 4096
    var floats = [Float](repeating: 0, count: framesPerChunk * channels)
    var packed = [UInt8](repeating: 0, count: framesPerChunk * 8 * 3)
    var frames = 0
    while true {
        let got = floats.withUnsafeMutableBytes { fread($0.baseAddress, 4 * channels, framesPerChunk, input) }
        if got == 0 { break }
        for (index, group) in groups.enumerated() {
            var offset = 0
            for frame in 0..<got {
                for channel in group {
                    let value = int24(floats[frame * channels + channel])
                    packed[offset] = UInt8(truncatingIfNeeded: value)
                    packed[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    packed[offset + 2] = UInt8(truncatingIfNeeded: value >> 16)
                    offset += 3
                }
            }
            fwrite(packed, 1, offset, outputs[index])
        }
        frames += got
    }
    for file in outputs { fclose(file) }
    print("\(frames) frames, \(groups.count) file(s)")
}

/// recd's conversion (Codec/SampleQuantizer.swift): clamp, scale by 2^23, round; NaN is 0.
func int24(_ sample: Float) -> Int32 {
    guard !sample.isNaN else { return 0 }
    let scaled = (sample * 8_388_608).rounded()
    return Int32(min(max(scaled, -8_388_608), 8_388_607))
}
