// The seam between the daemon and the hardware: the daemon takes device events from a
// DeviceEventSource, which is ALSA on a real box and a script in tests and simulations.

/// Where device events come from.
///
/// Threads: `deliver` is called on a thread the source owns, never on the caller of `start`
/// or of anything else, one batch at a time and in order. The first batch after `start` is
/// the complete initial state (possibly empty). `deliver` should only hand the batch over and
/// wake the consumer (the daemon queues it for its control thread); it must not block.
/// After `stop` returns, `deliver` is not called again (unless `stop` was called from inside
/// `deliver`: then the batch in progress finishes and nothing follows).
public protocol DeviceEventSource: AnyObject {
    /// Starts watching; throws when the devices cannot be watched at all. Calling `start` on
    /// a running source is a programmer error.
    func start(deliver: @escaping @Sendable ([DeviceEvent]) -> Void) throws
    /// Stops watching and releases the devices. Safe to call more than once, or before `start`.
    func stop()
}
