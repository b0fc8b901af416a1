// libFuzzer target: what recd reads from the programs it runs — `chronyc -n -c tracking`'s CSV
// line and `timedatectl`'s server name (Sources/Platform/TimeSource.swift; pw-dump's JSON is the
// network target's). A program's output is at most `maximumOutputBytes`; any of it must give a
// source or nil, never a trap.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Platform

@_cdecl("LLVMFuzzerTestOneInput")
public func childOutputFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let source = TimeSource.chrony(tracking: text) { precondition(!source.description.isEmpty) }
    _ = TimeSource.timesyncd(server: text)
    return 0
}
