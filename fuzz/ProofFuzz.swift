// libFuzzer target: the archive proof's parsers of outside bytes (Sources/ArchiveProof). An input
// is a chain file, then optionally `\0SIG\0` and a `.sig` file, then `\0HEAD\0` and a head
// record; the whole input is also a clip proof, a signature line, a head record and chain lines
// by themselves. The files are written into a scratch archive (on /dev/shm) and read the way
// recd and recctl read them: `ChainKeeper.append` (the check against what recd signed, then an
// append), `ChainKeeper.segments` (archive verify), `ArchiveProver.prove` with the record, and
// `ClipProof.verify`. Nothing may trap, and what the keeper appends to must then prove.
// Built and run by fuzz/run (swiftc -sanitize=fuzzer,address); not part of the package.
import Glibc
import Platform

@testable import ArchiveProof

/// The scratch archive, its key and record, made once per process.
let scratch: (root: String, keeper: ChainKeeper, clip: String) = {
    var template = Array("/dev/shm/recd-proof-fuzz-XXXXXX".utf8CString)
    let base = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    let root = base + "/archive"
    try! FileSystem.makeDirectories(root + "/2026/12/02", mode: 0o700)
    try! FileSystem.makeDirectories(base + "/state", mode: 0o700)
    let key = try! ArchiveSigningKey.loadOrCreate(path: base + "/state/archive-signing.key", now: 0)
    let keeper = ChainKeeper(archiveDirectory: root, key: key, heads: ChainHeads(directory: base + "/state/heads"))
    let clip = base + "/clip.flac"
    try! AtomicFile.write(Array("a clip".utf8), to: clip)
    return (root, keeper, clip)
}()

let chain = "2026/12/02/app-main.chain"

/// `bytes` split at the first `marker`: (before, after or nil).
func split(_ bytes: ArraySlice<UInt8>, at marker: [UInt8]) -> (ArraySlice<UInt8>, ArraySlice<UInt8>?) {
    guard bytes.count >= marker.count else { return (bytes, nil) }
    var index = bytes.startIndex
    while index + marker.count <= bytes.endIndex {
        if bytes[index..<index + marker.count].elementsEqual(marker) {
            return (bytes[..<index], bytes[(index + marker.count)...])
        }
        index += 1
    }
    return (bytes, nil)
}

/// Writes `bytes` to `path`, or removes it for nil.
func place(_ bytes: ArraySlice<UInt8>?, at path: String) {
    _ = unlink(path)
    guard let bytes else { return }
    try! AtomicFile.write(Array(bytes), to: path, mode: 0o600)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func proofFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: input, as: UTF8.self)
    let key = scratch.keeper.key.publicKey

    // The parsers by themselves.
    if let signature = ChainSignature(text: text) { _ = signature.isValid(chain: chain, key: key) }
    if let record = ChainHeadRecord(text: text) {
        precondition(ChainHeadRecord(text: record.text) == record, "a head record does not read back: \(record)")
    }
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if let entry = ChainEntry(line: line) { _ = entry.hash }
    }
    _ = ClipProof.verify(clipPath: scratch.clip, proofPath: "fuzz.proof", proofText: text, key: key)

    // As files: the chain, its signature, recd's record.
    let (chainBytes, rest) = split(input[...], at: Array("\0SIG\0".utf8))
    var signatureBytes: ArraySlice<UInt8>?
    var headBytes: ArraySlice<UInt8>?
    if let rest { (signatureBytes, headBytes) = split(rest, at: Array("\0HEAD\0".utf8)) }
    let root = scratch.root
    let chainPath = root + "/" + chain
    place(chainBytes, at: chainPath)
    place(signatureBytes, at: chainPath + ChainLayout.signatureSuffix)
    let headPath = scratch.keeper.heads.directory + "/" + chain + ".head"
    try! FileSystem.makeDirectories(FileSystem.directoryName(of: headPath), mode: 0o700)
    place(headBytes, at: headPath)

    let scope = ProofScope()
    _ = ArchiveProver.prove(archiveDirectory: root, key: key, scope: scope, heads: scratch.keeper.heads)
    _ = try? scratch.keeper.segments(inChain: chain)
    _ = try? scratch.keeper.lines(ofChain: chain)
    let facts = ChainKeeper.Facts(
        kind: .segment, sha256: .zero, start: "2026-12-02T10:00:00.000000Z", frames: 1, endReason: "rotation",
        path: "2026/12/02/app-main-20261202T100000.000Z.flac")
    if (try? scratch.keeper.append(facts, chain: chain)) != nil {
        // What the keeper extended, it signed: the chain, its signature and the record agree.
        let report = ArchiveProver.prove(archiveDirectory: root, key: key, scope: scope, heads: scratch.keeper.heads)
        let broken = report.findings.filter {
            ["chainBroken", "unsigned", "badSignature", "rolledBack"].contains($0.kind)
        }
        precondition(broken.isEmpty, "the keeper appended to a chain that then does not prove: \(broken)")
    }
    return 0
}
