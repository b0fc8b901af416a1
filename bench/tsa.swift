// bench/tsa: what an RFC 3161 time-stamp of a chain head costs recd's time-stamper thread per
// chain advance (docs/archive-proof.md, "Trusted time-stamps"), with PKI's own code (compiled in
// with Platform by bench/tsa): the query made, the exchange with a local TSA over HTTP
// (libcurl), the answer checked (OpenSSL's TS API), the token written (temporary file, fsync,
// rename). Thread CPU time: the TSA's own work is another process's.
import Glibc

@main
struct TimeStampBench {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count >= 3 else {
            print("usage: tsa URL ROOTS.pem [ROUNDS]")
            exit(2)
        }
        let rounds = arguments.count > 3 ? Int(arguments[3]) ?? 50 : 50
        let client = TimeStampClient(urls: [arguments[1]], caFile: arguments[2], pinnedFingerprint: nil)
        var template = Array("/tmp/recd-tsa-bench-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { _ = system("rm -rf '\(directory)'") }
        var total: [Double] = []
        var wall: [Double] = []
        var checks: [Double] = []
        var queries: [Double] = []
        for round in 0..<rounds {
            var digest = [UInt8](repeating: 0, count: 32)
            for index in digest.indices { digest[index] = UInt8(truncatingIfNeeded: round &* 31 &+ index) }
            let (cpu, started) = (cpuSeconds(), monotonic())
            guard case .success(let answer) = client.stamp(digest: digest) else {
                print("the TSA gave no token: \(client.stamp(digest: digest))")
                exit(1)
            }
            try! AtomicFile.write(answer.response, to: directory + "/app-main.chain.\(round + 1).tsr", mode: 0o644)
            total.append(cpuSeconds() - cpu)
            wall.append(monotonic() - started)
            let before = cpuSeconds()
            _ = TimeStampToken.check(answer.response, digest: digest, caFile: arguments[2])
            checks.append(cpuSeconds() - before)
            let beforeQuery = cpuSeconds()
            _ = try! TimeStampToken.query(digest: digest)
            queries.append(cpuSeconds() - beforeQuery)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        print("| per chain advance, median of \(rounds) | CPU | wall |")
        print("|---|---:|---:|")
        print(
            "| a stamp: query, HTTP exchange with a local TSA, answer checked, token written "
                + "| \(fixed(median(total) * 1e3, 3)) ms | \(fixed(median(wall) * 1e3, 1)) ms |")
        print(
            "| of it, the answer's check (signature, chain, imprint, nonce) | \(fixed(median(checks) * 1e3, 3)) ms | |")
        print("| of it, the query | \(fixed(median(queries) * 1e6, 1)) µs | |")
    }

    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
