// The causes a test names for scripts/test to run it once more after a failure (docs/testing.md).
// The machine's causes (xruns, load, stolen CPU time) scripts/test measures itself; a test names
// only what it alone knows, in its failure's text.

/// Marks a failure as one scripts/test may run once more: `scripts/test-causes` looks for the
/// mark in the failure's text. A test uses it only where the cause is outside the code under test.
public enum RerunCause {
    /// A server the test starts for itself (a private jackd or PipeWire) did not start: a registry
    /// slot another run still holds, a machine too busy to bring it up in time. Not for recd.
    public static func serverDidNotStart(_ what: String) -> String {
        "\(what) did not start [rerun-cause: server-start]"
    }

    /// A reply came late, and recd's control thread logged no busy turn meanwhile (it logs one
    /// busy past 100 ms, the time it waited for a CPU left out): no one turn of recd's held it up;
    /// the time went on waiting for a CPU or on shorter turns before it (not told apart). Only
    /// where the test checks the log for that line.
    public static func noLongTurn(_ what: String) -> String {
        "\(what) [rerun-cause: no-long-turn]"
    }
}
