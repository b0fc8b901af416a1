// Framing rules, without sockets.
import Platform
import Testing

@testable import SystemSupport

@Suite("Line framing")
struct LineBuffersTests {
    private func lines(_ assembler: inout LineAssembler) -> [LineAssembler.Next] {
        var result: [LineAssembler.Next] = []
        while true {
            let next = assembler.nextLine()
            result.append(next)
            if case .line = next { continue }
            return result
        }
    }

    @Test("lines split anywhere are reassembled; CRLF and LF both end a line")
    func reassembly() {
        var assembler = LineAssembler(maxLineBytes: 100)
        assembler.append(Array("he".utf8))
        #expect(lines(&assembler) == [.needMore])
        assembler.append(Array("llo\r\nwor".utf8))
        #expect(lines(&assembler) == [.line("hello"), .needMore])
        assembler.append(Array("ld\n\nlast".utf8))
        #expect(lines(&assembler) == [.line("world"), .line(""), .needMore])
        #expect(assembler.pendingByteCount == 4)
        #expect(assembler.takeRemainder() == "last")
        #expect(assembler.takeRemainder() == nil)
    }

    @Test("too-long lines are caught complete or still incomplete")
    func tooLong() {
        var complete = LineAssembler(maxLineBytes: 4)
        complete.append(Array("abcd\nabcde\n".utf8))
        #expect(lines(&complete) == [.line("abcd"), .tooLong])

        var crlf = LineAssembler(maxLineBytes: 4)
        crlf.append(Array("abcd\r".utf8))
        #expect(lines(&crlf) == [.needMore])
        crlf.append(Array("\n".utf8))
        #expect(lines(&crlf) == [.line("abcd"), .needMore])

        var incomplete = LineAssembler(maxLineBytes: 4)
        incomplete.append(Array("abcdef".utf8))
        #expect(lines(&incomplete) == [.tooLong])
    }

    @Test("invalid UTF-8 is replaced, NUL bytes survive")
    func decoding() {
        var assembler = LineAssembler(maxLineBytes: 100)
        assembler.append([0x61, 0xFF, 0x00, 0x62, 0x0A])
        #expect(lines(&assembler) == [.line("a\u{FFFD}\u{0}b"), .needMore])
    }

    @Test("a long stream of lines compacts without losing bytes")
    func compaction() {
        var assembler = LineAssembler(maxLineBytes: 1000)
        var received = 0
        for round in 0..<2000 {
            assembler.append(Array("line \(round)\nhalf".utf8))
            while case .line(let line) = assembler.nextLine() {
                #expect(line == (round == 0 ? "line 0" : "halfline \(round)"))
                received += 1
            }
        }
        #expect(received == 2000)
    }

    @Test("stream positions survive compaction: each line ends where the bytes say")
    func streamPositions() {
        // Both kinds of compaction happen: dropping a fully consumed buffer, and moving the
        // unfinished tail down once 64 KiB are consumed. Positions must not move with them.
        var assembler = LineAssembler(maxLineBytes: 1000)
        var appended = 0
        for round in 0..<10_000 {
            let leavesHalf = round < 9_000 || round % 2 == 1
            let bytes = Array((leavesHalf ? "line \(round)\nhalf" : "line \(round)\n").utf8)
            assembler.append(bytes)
            appended += bytes.count
            #expect(assembler.appendedByteCount == appended)
            while case .line = assembler.nextLine() {}
            #expect(assembler.consumedByteCount == appended - assembler.pendingByteCount)
            #expect(assembler.pendingByteCount == (leavesHalf ? 4 : 0))
        }
        #expect(assembler.takeRemainder() == "half")
        #expect(assembler.consumedByteCount == appended)
        #expect(assembler.appendedByteCount == appended)
    }

    @Test("output keeps whole lines when a slow reader is cut off")
    func outputTruncation() {
        var output = OutputBuffer()
        output.append(line: "first")
        output.append(line: "second")
        #expect(output.pendingByteCount == 13)
        #expect(output.drain { _ in 3 } == 3)  // "fir" written
        output.truncateAfterCurrentLine()
        output.append(line: "bye")
        var rest: [UInt8] = []
        _ = output.drain { bytes in
            rest = Array(bytes)
            return bytes.count
        }
        #expect(String(decoding: rest, as: UTF8.self) == "st\nbye\n")
        #expect(output.isEmpty)

        var untouched = OutputBuffer()
        untouched.append(line: "queued")
        untouched.truncateAfterCurrentLine()
        #expect(untouched.isEmpty)
    }
}
