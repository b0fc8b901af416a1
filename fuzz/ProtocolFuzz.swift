// libFuzzer target: the control protocol as recd decodes it. Bytes go through the daemon's own
// line framing (SystemSupport's LineAssembler), each line through Request.decode and the typed
// argument accessors, and every reply recd would send is checked to be one valid JSON line.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import ControlProtocol
import Foundation

@testable import SystemSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func protocolFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // recd's own limit (64 KiB): seeds with 30 000 levels of nesting reach the decoder whole.
    var assembler = LineAssembler(maxLineBytes: maxRequestLineBytes)
    assembler.append(UnsafeRawBufferPointer(start: data, count: size))
    var lines: [String] = []
    framing: while true {
        switch assembler.nextLine() {
        case .line(let line): lines.append(line)
        case .needMore: break framing
        case .tooLong: break framing
        }
    }
    if let rest = assembler.takeRemainder() { lines.append(rest) }
    for line in lines {
        exercise(line)
        exerciseTimeForms(line)
    }
    return 0
}

/// The times a person types (recctl's flags, the archive browser's `from=`/`to=`): any text is
/// resolved or refused, never a trap; a resolved time without its own zone is recd's UTC form.
func exerciseTimeForms(_ text: String) {
    let now = Date(timeIntervalSince1970: 1_796_000_000)
    for zone in ["UTC", "Europe/Berlin"] {
        guard let timeZone = TimeZone(identifier: zone) else { continue }
        guard let wire = try? TimeForms.resolve(text, now: now, timeZone: timeZone) else { continue }
        if wire != text && !wire.hasSuffix("Z") { fatalError("TimeForms resolved \(text) to \(wire), not UTC") }
    }
    _ = TimeForms.wire(Date(timeIntervalSince1970: Double(text.utf8.count) * 1e7 - 1e9), microseconds: true)
}

func exercise(_ line: String) {
    switch Request.decode(line) {
    case .failure(let failure):
        checkReply(Wire.failure(id: failure.id, failure.error, for: .protocol), id: failure.id)
    case .success(let request):
        // Every accessor the daemon uses, on every key the daemon reads.
        for key in [
            "app", "category", "mode", "options", "policy", "mic_usage", "input", "stream", "file", "to", "port",
            "bus", "since", "path", "muted", "notify_others", "force", "sample_rate", "io_buffer",
            "input_channels", "output_channels", "clear", "prefers_interruption_on_route_disconnect",
            "prefersNoInterruptionsFromSystemAlerts", "id", "v", "op",
        ] {
            _ = request.has(key)
            _ = try? request.optionalString(key)
            _ = try? request.optionalBool(key)
            _ = try? request.optionalDouble(key)
            _ = try? request.optionalInt(key)
            _ = try? request.optionalStrings(key)
        }
        checkReply(Wire.success(id: request.id, [("echo", request.body)]), id: request.id)
        do {
            _ = try request.string("app")
        } catch {
            checkReply(Wire.failure(id: request.id, error, for: request.interface), id: request.id)
        }
    }
}

/// A reply is one line of JSON that parses back with the request's id.
func checkReply(_ reply: String, id: JSONValue) {
    precondition(!reply.contains("\n"), "a reply holds a newline: \(reply.prefix(200))")
    guard let parsed = try? JSONValue.parse(reply) else {
        preconditionFailure("recd would send a reply that is not JSON: \(reply.prefix(500))")
    }
    precondition(parsed["id"] == id, "the reply's id \(String(describing: parsed["id"])) is not the request's \(id)")
}
