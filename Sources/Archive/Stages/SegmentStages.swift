// The stages every segment passes, in the order their tags are written: a new segment tag is a
// stage in a file of its own and one line here.

enum SegmentStages {
    static let all: [any SegmentStage.Type] = [
        LoudnessStage.self,
        ClockSyncStage.self,
        ClockSourceStage.self,
        ClockDriftStage.self,
        NetworkLossStage.self,
        SilenceStage.self,
        LevelOverviewStage.self,
    ]

    /// The stages of a recorder set up as `setup` says (those with nothing to do there left out).
    static func make(_ setup: StageSetup) -> [any SegmentStage] { all.compactMap { $0.init(setup) } }
}
