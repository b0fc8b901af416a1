// The console's proof reports are bounded per caller and in all (`ReportSlots`,
// BrowseReport.swift): a caller's second report while its first is made, or a third at once,
// gets 429 with Retry-After; a slot comes back when its report ends. End to end:
// ProofReportRouteTests.
import HTTPServer
import Testing

@testable import Daemon

@Suite("/api/report: one report per caller, two at once")
struct ReportSlotsTests {
    @Test("a caller's second report and a third at once are 429 with Retry-After; ending one frees its slot")
    func bounds() {
        let slots = ReportSlots()
        #expect(slots.begin("uid 1000") == nil)
        let again = slots.begin("uid 1000")
        #expect(again?.status == 429 && again?.headers.contains { $0.0 == "Retry-After" } == true)
        #expect(slots.begin("account ann") == nil)
        let third = slots.begin("uid 65534")
        #expect(third?.status == 429, "\(String(describing: third))")
        slots.end("uid 1000")
        #expect(slots.begin("uid 65534") == nil)
        #expect(slots.begin("uid 1000")?.status == 429, "two at once again")
        slots.end("account ann")
        slots.end("uid 65534")
        // An end without a begin never makes room for more than the bound.
        slots.end("uid 42")
        #expect(slots.begin("uid 1") == nil && slots.begin("uid 2") == nil && slots.begin("uid 3")?.status == 429)
    }
}
