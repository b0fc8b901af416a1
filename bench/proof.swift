// bench/proof: what proving costs per segment (docs/archive-proof.md): SHA-256 of a finished
// segment's bytes, and the chain entry (append, fsync, sign, signature file replaced), with
// ArchiveProof's own code (compiled in with Platform by bench/proof).
import Glibc

@main
struct ProofBench {
    static func main() {
        let arguments = CommandLine.arguments
        let megabytes = arguments.count > 1 ? Int(arguments[1]) ?? 600 : 600
        var template = Array("/tmp/recd-proof-bench-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf '\(directory)'") }
        // A segment's bytes (random: FLAC output does not compress either), written as the
        // archiver writes it, so it is in the page cache as at rotation.
        let segment = directory + "/2026/12/02/app-main-20261202T100000.000Z.flac"
        _ = system("mkdir -p '\(directory)/2026/12/02'")
        let fd = open(segment, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var block = [UInt8](repeating: 0, count: 1 << 20)
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<megabytes {
            for index in 0..<block.count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                block[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
            _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
        fsync(fd)
        close(fd)
        let key = try! ArchiveSigningKey.loadOrCreate(path: directory + "/archive-signing.key", now: 0)
        let keeper = ChainKeeper(archiveDirectory: directory, key: key)

        var hashCPU: [Double] = []
        var hashWall: [Double] = []
        var digest = SHA256Digest.zero
        for _ in 0..<3 {
            let (cpu, wall) = (cpuSeconds(), monotonic())
            digest = try! SHA256Digest.ofFile(segment)
            hashCPU.append(cpuSeconds() - cpu)
            hashWall.append(monotonic() - wall)
        }
        var appendCPU: [Double] = []
        var appendWall: [Double] = []
        var signCPU: [Double] = []
        let rounds = 50
        for round in 0..<rounds {
            let (cpu, wall) = (cpuSeconds(), monotonic())
            _ = try! keeper.append(
                ChainKeeper.Facts(
                    kind: .segment, sha256: SHA256Digest.of(Array("\(round)".utf8)),
                    start: "2026-12-02T10:00:00.000000Z", frames: 172_800_000, endReason: "rotation",
                    path: "2026/12/02/app-main-\(round).flac"),
                chain: "2026/12/02/app-main.chain")
            appendCPU.append(cpuSeconds() - cpu)
            appendWall.append(monotonic() - wall)
            let before = cpuSeconds()
            _ = key.sign(Array("recd-chain-head-1\n2026/12/02/app-main.chain\n\(round)\n\(digest.hex)\n".utf8))
            signCPU.append(cpuSeconds() - before)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let best = hashCPU.min()!
        print("| what | CPU | wall |")
        print("|---|---:|---:|")
        print(
            "| SHA-256 of a \(megabytes) MB segment (page cache), best of 3 | \(fixed(best, 3)) s "
                + "(\(fixed(Double(megabytes) / best, 0)) MB/s) | \(fixed(hashWall.min()!, 3)) s |")
        print(
            "| chain entry: append, fsync, sign, signature file replaced; median of \(rounds) "
                + "| \(fixed(median(appendCPU) * 1e3, 3)) ms | \(fixed(median(appendWall) * 1e3, 3)) ms |")
        print("| Ed25519 signature alone, median of \(rounds) | \(fixed(median(signCPU) * 1e6, 1)) µs | |")
    }

    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
