// The tone's JACK process callback, outside main.swift so that it is not tied to the main
// actor: JACK calls it on its own thread. Plain memory only, nothing that allocates or locks.
import CJack
import Glibc

/// The process thread's state: the port and the oscillator.
struct Tone {
    var port: OpaquePointer?
    var phase: Float = 0
    var step: Float = 0
}

/// Writes a sine of half full scale to the port. `argument` is the `Tone`.
func renderTone(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    let tone = argument!.assumingMemoryBound(to: Tone.self)
    let out = jack_port_get_buffer(tone.pointee.port, frames)!.assumingMemoryBound(to: Float.self)
    for i in 0..<Int(frames) {
        out[i] = 0.5 * sinf(tone.pointee.phase)
        tone.pointee.phase += tone.pointee.step
        if tone.pointee.phase > 2 * Float.pi { tone.pointee.phase -= 2 * Float.pi }
    }
    return 0
}
