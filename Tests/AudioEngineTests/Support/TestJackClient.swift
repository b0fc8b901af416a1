// A JACK client written straight on libjack, standing in for a deck (it plays a known signal
// into its output ports) and for headphones (it records its input ports). Independent of the
// engine under test, so that what it plays and hears is ground truth.

import CJack
import Glibc

/// What the test client plays on its outputs.
enum TestSignal {
    /// Channel c of frame k (counting from the client's first cycle) is (k + 1) * (c even ? 1 : -1):
    /// exact in Float for the first 2^24 frames, and every frame tells its own position.
    case counter
    /// Every sample is this value.
    case constant(Float)
    /// Every sample of channel c is `values[c]` (channels past the list: 0).
    case constants([Float])
    /// `amplitude × sin(2π × k / cycleFrames)` on every channel, k counting frames from the
    /// client's first cycle (a whole number of frames per cycle: the peak is sampled exactly
    /// when `cycleFrames` is a multiple of 4).
    case sine(cycleFrames: Int, amplitude: Float)
    /// `amplitude` on every channel at frames k = 0, interval, 2 × interval, ...; 0 elsewhere.
    case impulses(interval: Int, amplitude: Float)
}

/// The test client's plain-memory process state.
private struct TestClientState {
    var outputPorts: UnsafeMutablePointer<OpaquePointer?>
    var outputCount: Int
    var inputPorts: UnsafeMutablePointer<OpaquePointer?>
    var inputCount: Int
    /// Per output channel, for `.constant`/`.constants`.
    var constants: UnsafeMutablePointer<Float>
    var mode: SignalMode
    var amplitude: Float
    /// Frames per sine cycle, or between impulses.
    var interval: Int
    var framesPlayed: Int
    /// Interleaved input frames; whole frames only.
    var recording: UnsafeMutablePointer<jack_ringbuffer_t>?
    var droppedFrames: Int
}

private enum SignalMode { case counter, constants, sine, impulses }

private func testClientProcess(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?)
    -> Int32
{
    guard let state = argument?.assumingMemoryBound(to: TestClientState.self) else { return 0 }
    let count = Int(frames)
    for channel in 0..<state.pointee.outputCount {
        guard let port = state.pointee.outputPorts[channel],
            let buffer = jack_port_get_buffer(port, frames)?.assumingMemoryBound(to: Float.self)
        else { continue }
        let sign: Float = channel % 2 == 0 ? 1 : -1
        let played = state.pointee.framesPlayed
        switch state.pointee.mode {
        case .counter:
            for frame in 0..<count { buffer[frame] = sign * Float(played + frame + 1) }
        case .constants:
            let value = state.pointee.constants[channel]
            for frame in 0..<count { buffer[frame] = value }
        case .sine:
            let step = 2 * Double.pi / Double(state.pointee.interval)
            for frame in 0..<count {
                buffer[frame] =
                    state.pointee.amplitude * Float(sin(step * Double(played + frame)))
            }
        case .impulses:
            let interval = state.pointee.interval
            for frame in 0..<count {
                buffer[frame] = (played + frame) % interval == 0 ? state.pointee.amplitude : 0
            }
        }
    }
    state.pointee.framesPlayed += count
    if let ring = state.pointee.recording, state.pointee.inputCount > 0 {
        let channels = state.pointee.inputCount
        let bytes = count * channels * MemoryLayout<Float>.size
        if jack_ringbuffer_write_space(ring) < bytes {
            state.pointee.droppedFrames += count
            return 0
        }
        for index in 0..<count {
            for channel in 0..<channels {
                var sample: Float = 0
                if let port = state.pointee.inputPorts[channel],
                    let buffer = jack_port_get_buffer(port, frames)?.assumingMemoryBound(
                        to: Float.self)
                {
                    sample = buffer[index]
                }
                withUnsafeBytes(of: &sample) { raw in
                    _ = jack_ringbuffer_write(
                        ring, raw.baseAddress!.assumingMemoryBound(to: CChar.self), 4)
                }
            }
        }
    }
    return 0
}

/// A JACK client on libjack's default server (or `serverName`) with `outputs` output ports
/// `out_1...` playing `signal` and `inputs` input ports `in_1...` recorded into a ring.
/// Control thread only; `close()` it (deinit also does).
final class TestJackClient {
    let client: OpaquePointer
    let name: String
    private let state: UnsafeMutablePointer<TestClientState>
    private var extraPorts: [String: OpaquePointer] = [:]
    private var closed = false

    init(
        name requested: String, outputs: Int = 0, inputs: Int = 0, signal: TestSignal = .counter,
        recordSeconds: Int = 10, serverName: String? = nil
    ) throws {
        var status = jack_status_t(rawValue: 0)
        guard let client = recd_jack_client_open(requested, serverName, &status) else {
            throw TestClientError("cannot open test client \(requested): status \(status.rawValue)")
        }
        self.client = client
        name = String(cString: jack_get_client_name(client))
        let rate = Int(jack_get_sample_rate(client))
        state = .allocate(capacity: 1)
        let outputPorts = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(outputs, 1))
        let inputPorts = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(inputs, 1))
        for index in 0..<outputs {
            outputPorts[index] = jack_port_register(
                client, "out_\(index + 1)", JACK_DEFAULT_AUDIO_TYPE,
                UInt(JackPortIsOutput.rawValue), 0)
        }
        for index in 0..<inputs {
            inputPorts[index] = jack_port_register(
                client, "in_\(index + 1)", JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsInput.rawValue),
                0)
        }
        let constants = UnsafeMutablePointer<Float>.allocate(capacity: max(outputs, 1))
        constants.initialize(repeating: 0, count: max(outputs, 1))
        var mode = SignalMode.counter
        var amplitude: Float = 0
        var interval = 1
        switch signal {
        case .counter: break
        case .constant(let value):
            mode = .constants
            for channel in 0..<outputs { constants[channel] = value }
        case .constants(let values):
            mode = .constants
            for channel in 0..<min(outputs, values.count) { constants[channel] = values[channel] }
        case .sine(let cycle, let level):
            mode = .sine
            interval = max(cycle, 1)
            amplitude = level
        case .impulses(let every, let level):
            mode = .impulses
            interval = max(every, 1)
            amplitude = level
        }
        let recording =
            inputs > 0
            ? jack_ringbuffer_create(rate * recordSeconds * inputs * MemoryLayout<Float>.size) : nil
        state.initialize(
            to: TestClientState(
                outputPorts: outputPorts, outputCount: outputs, inputPorts: inputPorts,
                inputCount: inputs, constants: constants, mode: mode, amplitude: amplitude,
                interval: interval, framesPlayed: 0, recording: recording, droppedFrames: 0))
        jack_set_process_callback(client, testClientProcess, UnsafeMutableRawPointer(state))
        guard jack_activate(client) == 0 else {
            jack_client_close(client)
            throw TestClientError("cannot activate test client \(name)")
        }
    }

    deinit { close() }

    var outputPortNames: [String] {
        (0..<state.pointee.outputCount).map { "\(name):out_\($0 + 1)" }
    }
    var inputPortNames: [String] { (0..<state.pointee.inputCount).map { "\(name):in_\($0 + 1)" } }

    /// Everything recorded since the last call, interleaved.
    func takeRecording() -> [Float] {
        guard let ring = state.pointee.recording else { return [] }
        let bytes = jack_ringbuffer_read_space(ring)
        let frameBytes = state.pointee.inputCount * MemoryLayout<Float>.size
        let samples = (bytes / frameBytes) * state.pointee.inputCount
        var result = [Float](repeating: 0, count: samples)
        result.withUnsafeMutableBytes { raw in
            _ = jack_ringbuffer_read(
                ring, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
        }
        return result
    }

    /// Frames the recording ring had no room for (then the recording is not continuous).
    var droppedFrames: Int { state.pointee.droppedFrames }

    /// Connects two ports by full name (an output, then an input).
    func connect(source: String, destination: String) throws {
        let result = jack_connect(client, source, destination)
        guard result == 0 || result == 17 else {  // 17: EEXIST, already connected
            throw TestClientError("cannot connect \(source) → \(destination): \(result)")
        }
    }

    /// Disconnects two ports by full name (what a patchbay fighting recd does).
    func disconnect(source: String, destination: String) -> Bool {
        jack_disconnect(client, source, destination) == 0
    }

    /// Registers an extra output port (it appears to others as `name:short`).
    func registerOutputPort(_ short: String) {
        extraPorts[short] = jack_port_register(
            client, short, JACK_DEFAULT_AUDIO_TYPE, UInt(JackPortIsOutput.rawValue), 0)
    }

    func unregisterPort(_ short: String) {
        if let port = extraPorts.removeValue(forKey: short) { jack_port_unregister(client, port) }
    }

    /// Renames an extra port (jack_port_rename); it keeps its id and connections.
    func renamePort(_ short: String, to newShort: String) throws {
        guard let port = extraPorts.removeValue(forKey: short) else {
            throw TestClientError("no port \(short) to rename")
        }
        extraPorts[newShort] = port
        let result = jack_port_rename(client, port, newShort)
        guard result == 0 else { throw TestClientError("cannot rename \(short) → \(newShort): \(result)") }
    }

    /// The id of JACK's process thread of this client.
    var processThread: pthread_t { jack_client_thread_id(client) }

    func close() {
        guard !closed else { return }
        closed = true
        jack_deactivate(client)
        jack_client_close(client)
        if let ring = state.pointee.recording { jack_ringbuffer_free(ring) }
        state.pointee.outputPorts.deallocate()
        state.pointee.inputPorts.deallocate()
        state.pointee.constants.deallocate()
        state.deallocate()
    }
}

struct TestClientError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
