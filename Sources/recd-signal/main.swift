// recd-signal: plays known signals into JACK and captures JACK ports, for recd's tests, the
// demo and the benchmarks. This file only wires the parts together; `--help` documents the
// interface (HelpText.swift).

#if canImport(Glibc)
    import Glibc
#endif

// Before anything else, and before libjack starts threads: they inherit the blocked mask, so
// only the main thread's sigtimedwait ever sees SIGTERM/SIGINT.
let signals = StopSignals()

let invocation: Invocation
do {
    switch try Invocation.parse(Array(CommandLine.arguments.dropFirst())) {
    case .help:
        Console.outRaw(HelpText.text + "\n")
        exit(ExitStatus.ok.rawValue)
    case .run(let parsed):
        invocation = parsed
    }
} catch {
    Console.error(error.message)
    Console.errorRaw("Try 'recd-signal --help'.\n")
    exit(ExitStatus.usage.rawValue)
}

do throws(Failure) {
    switch invocation.command {
    case .play(let options): try runPlay(options, invocation: invocation, signals: signals)
    case .capture(let options): try runCapture(options, invocation: invocation, signals: signals)
    case .ports(let names, let closeOnly):
        try runPorts(names: names, closeOnly: closeOnly, invocation: invocation, signals: signals)
    case .echo(let options): try runEcho(options, invocation: invocation, signals: signals)
    }
    exit(ExitStatus.ok.rawValue)
} catch {
    Console.error(error.message)
    exit(error.status.rawValue)
}
