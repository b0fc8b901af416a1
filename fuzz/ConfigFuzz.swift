// libFuzzer target: the config parser (libinih underneath, then recd's interpreter) on raw
// file bytes, as `recd --config` and `recd --check-config` read them. Every input must give a
// config or a ConfigError with a line inside the file; nothing may trap.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
@testable import SystemSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func configFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let lineCount = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
    let environment = [
        "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/home/u/.local/state", "HOME": "/home/u",
    ]
    for isRoot in [false, true] {
        do {
            let config = try ConfigLoader.parse(
                bytes: bytes, source: "fuzz.conf", environment: environment, isRoot: isRoot)
            _ = config.ports.count
        } catch {
            precondition(
                error.line >= 0 && error.line <= lineCount + 1,
                "error line \(error.line) outside a \(lineCount)-line file: \(error)")
            precondition(!error.message.isEmpty, "an error without a message")
        }
    }
    return 0
}
