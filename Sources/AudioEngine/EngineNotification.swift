/// Something that happened to the JACK server or graph, as a value for the control thread.
///
/// JACK announces these on its own threads; recd never acts there. The callbacks record them
/// and call the engine's wake-up closure; the control thread then collects them with
/// `AudioEngine.drainNotifications()`, which also derives the group events.
public enum EngineNotification: Equatable, Hashable, Sendable {
    /// A JACK port appeared (full name, `client:port`).
    case portRegistered(String)
    /// A JACK port went away.
    case portUnregistered(String)
    /// Two ports were connected or disconnected (by anyone). When one of them is ours and the
    /// connection is one recd makes, the next `repairConnections()` makes it again.
    case portConnectionChanged(source: String, destination: String, connected: Bool)
    /// `count` xruns happened since the previous drain.
    case xrun(count: Int)
    /// The server's period changed to this many frames (another client's `jack_bufsize`, or
    /// recd's own `setBufferSize`). JACK's repeat of the current value at activation is not
    /// reported.
    case bufferSize(Int)
    /// The server's sample rate changed (jackd2 changes it only with a new server, which comes
    /// as `serverLost` then a reconnect; PipeWire's JACK can change it live). JACK's repeat of
    /// the current value at activation is not reported.
    case sampleRate(Int)
    /// The server is gone (jack_on_info_shutdown's reason). The engine stops processing;
    /// call `AudioEngine.reconnect(timeout:)`.
    case serverLost(String)
    /// A configured port group became available (all the JACK ports behind it exist) or
    /// unavailable. Derived by `drainNotifications()` on the control thread.
    case groupAvailabilityChanged(group: String, available: Bool)
}
