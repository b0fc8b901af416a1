// A segment's network comments: the packet counts over the segment, and network losses placed in the
// file's frames around its GAPS (which are not in the file).
import Testing

@testable import Archive

@Suite("Network comments: NETWORK_PACKETS, NETWORK_PACKETS_LOST, NETWORK_LOSS")
struct NetworkCommentsTests {
    @Test("counts over the segment; a stream that started again counts from its start; none known, none written")
    func counts() {
        let start = NetworkPacketCounts(received: 1000, lost: 3)
        let end = NetworkPacketCounts(received: 4000, lost: 10)
        #expect(
            NetworkComments.comments(start: start, end: end, losses: []).map(\.description) == [
                "NETWORK_PACKETS=3000", "NETWORK_PACKETS_LOST=7",
            ])
        #expect(
            NetworkComments.comments(start: start, end: NetworkPacketCounts(received: 50, lost: 0), losses: [])
                .map(\.description) == ["NETWORK_PACKETS=50", "NETWORK_PACKETS_LOST=0"])
        #expect(NetworkComments.comments(start: start, end: nil, losses: []).isEmpty)
        #expect(
            NetworkComments.comments(
                start: nil, end: end,
                losses: [SegmentGap(position: 5, length: 10), SegmentGap(position: 40, length: 2)]
            ).last?.description == "NETWORK_LOSS=5+10,40+2")
    }

    @Test("a time-line offset is a file position less the gaps before it")
    func positions() {
        let gaps = [SegmentGap(position: 100, length: 50), SegmentGap(position: 300, length: 10)]
        #expect(NetworkComments.filePosition(timelineOffset: 80, gaps: gaps) == 80)
        #expect(NetworkComments.filePosition(timelineOffset: 120, gaps: gaps) == 100)
        #expect(NetworkComments.filePosition(timelineOffset: 200, gaps: gaps) == 150)
        #expect(NetworkComments.filePosition(timelineOffset: 400, gaps: gaps) == 340)
        #expect(NetworkComments.filePosition(timelineOffset: 400, gaps: []) == 400)
    }
}
