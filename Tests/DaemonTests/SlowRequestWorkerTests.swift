// The worker for slow requests, alone: real threads, and a test thread standing in for the
// control thread (it runs what the worker delivers, as ControlServer.post would).
import Dispatch
import Foundation
import Glibc
import Synchronization
import SystemSupport
import Testing

@testable import Daemon

private func currentThreadName() -> String {
    let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
    return name.trimmingCharacters(in: .newlines)
}

@Suite("slow request worker")
final class SlowRequestWorkerTests {
    let alice = ClientID(rawValue: 1)
    let bob = ClientID(rawValue: 2)
    let mailbox = Mailbox()
    let worker: SlowRequestWorker

    init() throws { worker = try SlowRequestWorker(name: "test worker", deliver: mailbox.deliver) }
    deinit { worker.stop() }

    @Test(
        "submit returns at once; the job runs on the named worker thread; the result comes back on the control thread")
    func offTheControlThread() throws {
        let gate = DispatchSemaphore(value: 0)
        let control = pthread_self()
        let result = Shared<(String, Bool)?>(nil)
        let started = Date()
        worker.submit(
            for: alice,
            { _ -> (String, Bool) in
                gate.wait()
                return (currentThreadName(), pthread_equal(pthread_self(), control) != 0)
            }
        ) { value in
            #expect(pthread_equal(pthread_self(), control) != 0, "completions run where deliveries are run")
            result.update { $0 = value }
        }
        #expect(Date().timeIntervalSince(started) < 0.05, "submit waited for the job")
        gate.signal()
        #expect(mailbox.run(until: { result.get != nil }))
        #expect(result.get?.0 == "test worker")
        #expect(result.get?.1 == false, "the job ran on the control thread")
    }

    @Test("results come back in the order the jobs were submitted")
    func inOrder() throws {
        let seen = Shared<[Int]>([])
        for index in 0..<20 {
            worker.submit(
                for: index.isMultiple(of: 2) ? alice : bob,
                { _ -> Int in
                    usleep(UInt32((index * 7919) % 3_000))
                    return index
                }
            ) { value in seen.update { $0.append(value) } }
        }
        #expect(mailbox.run(until: { seen.get.count == 20 }))
        #expect(seen.get == Array(0..<20))
    }

    @Test("a client that went away gets no reply: its queued job never runs, its running job is told to stop")
    func droppedClient() throws {
        let gate = DispatchSemaphore(value: 0)
        let running = DispatchSemaphore(value: 0)
        let ran = Shared<[String]>([])
        let replies = Shared<[String]>([])
        let cancelledSeen = Shared<Bool?>(nil)
        worker.submit(
            for: alice,
            { job -> String in
                running.signal()
                gate.wait()
                cancelledSeen.update { $0 = job.isCancelled }
                ran.update { $0.append("alice 1") }
                return "alice 1"
            }
        ) { value in replies.update { $0.append(value) } }
        for (client, name) in [(alice, "alice 2"), (bob, "bob")] {
            worker.submit(
                for: client,
                { _ -> String in
                    ran.update { $0.append(name) }
                    return name
                }
            ) { value in replies.update { $0.append(value) } }
        }
        running.wait()
        worker.clientGone(alice)
        gate.signal()
        #expect(mailbox.run(until: { replies.get.contains("bob") }))
        mailbox.run()
        #expect(replies.get == ["bob"])
        #expect(ran.get == ["alice 1", "bob"])
        #expect(cancelledSeen.get == true)
    }

    @Test("a result already on its way is dropped when its client goes before it is delivered")
    func droppedInFlight() throws {
        let done = DispatchSemaphore(value: 0)
        let replies = Shared<[String]>([])
        worker.submit(
            for: alice,
            { _ -> String in
                defer { done.signal() }
                return "alice"
            }
        ) { value in replies.update { $0.append(value) } }
        done.wait()
        usleep(10_000)  // the delivery is queued by now
        worker.clientGone(alice)
        mailbox.run()
        #expect(replies.get.isEmpty)
    }

    @Test("progress reaches the handler before the result, in order, and stops with the client")
    func progress() throws {
        let lines = Shared<[String]>([])
        worker.submit(
            for: alice,
            { job -> Int in
                for step in 1...3 { job.progress(done: step, total: 3) }
                return 3
            },
            progress: { done, total in lines.update { $0.append("\(done)/\(total)") } }
        ) { value in lines.update { $0.append("done \(value)") } }
        #expect(mailbox.run(until: { lines.get.count == 4 }))
        #expect(lines.get == ["1/3", "2/3", "3/3", "done 3"])

        let gate = DispatchSemaphore(value: 0)
        let bobLines = Shared<[String]>([])
        worker.submit(
            for: bob,
            { job -> Int in
                job.progress(done: 1, total: 2)
                gate.wait()
                job.progress(done: 2, total: 2)
                return 2
            },
            progress: { done, total in bobLines.update { $0.append("\(done)/\(total)") } }
        ) { value in bobLines.update { $0.append("done \(value)") } }
        #expect(mailbox.run(until: { bobLines.get == ["1/2"] }))
        worker.clientGone(bob)
        gate.signal()
        usleep(20_000)
        mailbox.run()
        #expect(bobLines.get == ["1/2"])
    }

    @Test("stop waits for the running job, drops the queued ones and refuses new ones")
    func stopping() throws {
        let gate = DispatchSemaphore(value: 0)
        let running = DispatchSemaphore(value: 0)
        let ran = Shared<[String]>([])
        worker.submit(
            for: nil,
            { job -> Bool in
                running.signal()
                gate.wait()
                ran.update { $0.append("first") }
                return job.isCancelled
            }
        ) { _ in Issue.record("a stopped worker delivered a result") }
        worker.submit(for: nil, { _ in ran.update { $0.append("second") } }) { _ in }
        running.wait()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { gate.signal() }
        worker.stop()
        #expect(ran.get == ["first"], "stop returned before the running job ended, or a queued job ran")
        worker.submit(for: nil, { _ in ran.update { $0.append("late") } }) { _ in }
        usleep(20_000)
        mailbox.run()
        #expect(ran.get == ["first"])
    }
}
