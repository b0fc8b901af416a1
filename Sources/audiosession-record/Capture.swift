// The recorder's JACK process callback, outside main.swift so that it is not tied to the main
// actor: JACK calls it on its own thread. It only copies the port's buffer into the ring.
import CJack

/// The process thread's state: the port and the ring to the writer.
struct Capture {
    var port: OpaquePointer?
    var ring: UnsafeMutablePointer<jack_ringbuffer_t>?
}

/// Copies the port's samples to the ring (dropped if the writer fell behind). `argument` is the `Capture`.
func captureInput(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    let capture = argument!.assumingMemoryBound(to: Capture.self)
    let input = jack_port_get_buffer(capture.pointee.port, frames)!.assumingMemoryBound(to: CChar.self)
    _ = jack_ringbuffer_write(capture.pointee.ring, input, Int(frames) * 4)
    return 0
}
