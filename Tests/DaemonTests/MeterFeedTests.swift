// The status page's meter feed (`/events`): no listener, no work; at most `maxListeners`
// streams; a stream the listener closed (client gone, too slow) is dropped at the next publish.
import ControlProtocol
import Testing

@testable import Daemon

@Suite("status page meter feed")
struct MeterFeedTests {
    @Test("wanted only while a stream is open; 16 at most; closed streams dropped at the next publish")
    func listeners() throws {
        let feed = MeterFeed()
        #expect(!feed.isWanted, "no stream: the tick must render nothing")
        let meters: JSONValue = ["meters": [], "windowMs": 100, "recordings": []]
        var streams = try (0..<MeterFeed.maxListeners).map { _ in try #require(feed.subscribe()) }
        #expect(feed.isWanted)
        #expect(feed.subscribe() == nil, "a 17th stream must be refused")
        feed.publish(meters)
        #expect(streams.allSatisfy { !$0.isClosed })
        streams[0].close()
        #expect(feed.subscribe() != nil, "a closed stream frees its place")
        for stream in streams { stream.close() }
        streams.removeAll()
        feed.publish(meters)
        #expect(feed.isWanted, "the 17th stream is still open")
    }

    @Test("every stream closed: the next publish drops them all and the feed is no longer wanted")
    func allGone() throws {
        let feed = MeterFeed()
        let stream = try #require(feed.subscribe())
        stream.close()
        #expect(feed.isWanted, "dropped at the next publish, not before")
        feed.publish(["meters": [], "windowMs": 100, "recordings": []])
        #expect(!feed.isWanted)
    }
}
