// SPEC §1: the category × mode and option × category tables, cell by cell, and the rules that
// go with them. Expected values come from the verbatim tables in `Spec`, never from the module.

import Testing

@testable import SessionPolicy

struct ModeCell: Sendable, CustomTestStringConvertible {
    enum Verdict: Sendable { case accepted, acceptedWithHFP, rejected }
    let category: String
    let mode: String
    let verdict: Verdict
    var testDescription: String { "\(category) × \(mode): \(verdict)" }

    /// Every category × mode pair, gameChat included (a column of rejections).
    static let all: [ModeCell] = {
        let rows = Spec.rows(Spec.modeTable)
        let header = rows[0]
        var cells: [ModeCell] = []
        for row in rows.dropFirst() {
            for (column, cell) in zip(header.dropFirst(), row.dropFirst()) {
                let verdict: Verdict =
                    cell.isEmpty ? .rejected : cell.contains("requires allowBluetoothHFP") ? .acceptedWithHFP : .accepted
                cells.append(ModeCell(category: row[0], mode: column, verdict: verdict))
            }
            cells.append(ModeCell(category: row[0], mode: "gameChat", verdict: .rejected))
        }
        return cells
    }()

    /// The accepted modes of a category per the spec table.
    static func accepted(for category: String) -> [String] {
        all.filter { $0.category == category && $0.verdict != .rejected }.map(\.mode)
    }
}

struct OptionCell: Sendable, CustomTestStringConvertible {
    enum Verdict: Sendable { case accepted, onlyWithDualRoute, rejected }
    let option: String
    let category: String
    let verdict: Verdict
    var testDescription: String { "\(option) × \(category): \(verdict)" }

    static let all: [OptionCell] = {
        let rows = Spec.rows(Spec.optionTable)
        let header = rows[0]
        return rows.dropFirst().flatMap { row in
            zip(header.dropFirst(), row.dropFirst()).map { column, cell in
                let verdict: Verdict =
                    cell.isEmpty ? .rejected : cell == "only with mode dualRoute" ? .onlyWithDualRoute : .accepted
                return OptionCell(option: row[0], category: column, verdict: verdict)
            }
        }
    }()

    /// Whether the spec accepts `option` with `category` in `mode`.
    static func accepts(_ option: String, _ category: String, mode: String) -> Bool {
        guard let cell = all.first(where: { $0.option == option && $0.category == category }) else { return false }
        switch cell.verdict {
        case .accepted: return true
        case .onlyWithDualRoute: return mode == "dualRoute"
        case .rejected: return false
        }
    }
}

@Suite("SPEC §1 tables")
struct ConfigurationTableTests {
    @Test func specTablesParseToTheirFullSize() {
        #expect(ModeCell.all.count == 6 * 11)
        #expect(OptionCell.all.count == 9 * 6)
        #expect(Set(ModeCell.all.map(\.mode)) == Set(Spec.modes))
        #expect(Set(OptionCell.all.map(\.option)) == Set(Spec.optionValues.map(\.name)))
    }

    @Test func vocabularyIsExactlyTheSpecs() {
        #expect(Set(Category.allCases.map(\.rawValue)) == Set(Spec.categories))
        #expect(Set(Mode.allCases.map(\.rawValue)) == Set(Spec.modes))
        #expect(Set(CategoryOption.allCases.map(\.rawValue)) == Set(Spec.optionValues.map(\.name)))
        #expect(
            Set(RouteSharingPolicy.allCases.map(\.rawValue)) == ["default", "longFormAudio", "longFormVideo", "independent"])
        #expect(Category.initial == .soloAmbient)
        #expect(SessionConfiguration.initial.category == .soloAmbient)
        #expect(SessionConfiguration.initial.mode == .default)
        #expect(SessionConfiguration.initial.requestedOptions.isEmpty)
        #expect(SessionConfiguration.initial.policy == .default)
    }

    @Test(arguments: ModeCell.all)
    func categoryModeCell(_ cell: ModeCell) throws {
        let category = try #require(Category(rawValue: cell.category))
        let mode = try #require(Mode(rawValue: cell.mode))
        switch cell.verdict {
        case .accepted:
            let configuration = try SessionConfiguration.validated(category: category, mode: mode)
            #expect(configuration.category == category)
            #expect(configuration.mode == mode)
            #expect(configuration.requestedOptions.isEmpty)
        case .acceptedWithHFP:
            let configuration = try SessionConfiguration.validated(
                category: category, mode: mode, options: [.allowBluetoothHFP])
            #expect(configuration.category == category)
            #expect(configuration.mode == mode)
            #expect(configuration.requestedOptions == [.allowBluetoothHFP])
            // Without allowBluetoothHFP in the same call: badParam.
            expectError(.badParam, mentioning: [cell.mode, "allowBluetoothHFP"]) {
                _ = try SessionConfiguration.validated(category: category, mode: mode)
            }
            expectError(.badParam, mentioning: [cell.mode, "allowBluetoothHFP"]) {
                _ = try SessionConfiguration.validated(category: category, mode: mode, options: [.defaultToSpeaker])
            }
        case .rejected:
            let names = mode == .gameChat ? [cell.mode] : [cell.mode, cell.category]
            expectError(.badParam, mentioning: names) {
                _ = try SessionConfiguration.validated(category: category, mode: mode)
            }
            if mode == .dualRoute, category == .record || category == .playAndRecord {
                expectError(.badParam, mentioning: names) {
                    _ = try SessionConfiguration.validated(category: category, mode: mode, options: [.allowBluetoothHFP])
                }
            }
        }
    }

    @Test(arguments: Spec.categories)
    func gameChatCannotBeSetByAClient(_ name: String) throws {
        let category = try #require(Category(rawValue: name))
        // It still parses as a mode (a status can show it) ...
        #expect(try Vocabulary.mode("gameChat") == .gameChat)
        // ... but no client can set it, whatever the options.
        for options: Set<CategoryOption> in [[], [.mixWithOthers], [.allowBluetoothHFP]] {
            expectError(.badParam, mentioning: ["gameChat"]) {
                _ = try SessionConfiguration.validated(category: category, mode: .gameChat, options: options)
            }
        }
    }

    @Test(arguments: OptionCell.all)
    func optionCategoryCell(_ cell: OptionCell) throws {
        let option = try #require(CategoryOption(rawValue: cell.option))
        let category = try #require(Category(rawValue: cell.category))
        switch cell.verdict {
        case .accepted:
            let configuration = try SessionConfiguration.validated(category: category, mode: .default, options: [option])
            #expect(configuration.requestedOptions == [option])
            #expect(configuration.effectiveOptions.contains(option))
        case .onlyWithDualRoute:
            let configuration = try SessionConfiguration.validated(category: category, mode: .dualRoute, options: [option])
            #expect(configuration.requestedOptions == [option])
            #expect(configuration.effectiveOptions.contains(option))
            for mode in ModeCell.accepted(for: cell.category).filter({ $0 != "dualRoute" }) {
                let other = try #require(Mode(rawValue: mode))
                expectError(.badParam, mentioning: [cell.option]) {
                    _ = try SessionConfiguration.validated(category: category, mode: other, options: [option])
                }
            }
        case .rejected:
            expectError(.badParam, mentioning: [cell.option]) {
                _ = try SessionConfiguration.validated(category: category, mode: .default, options: [option])
            }
            // Mixed in with accepted options, it still fails, and it is the one named.
            expectError(.badParam, mentioning: [cell.option]) {
                _ = try SessionConfiguration.validated(
                    category: category, mode: .default, options: [.mixWithOthers, option])
            }
        }
    }

    /// Every accepted mode of a category with every option: accepted exactly where the option
    /// table says so (dualRoute always carries its required allowBluetoothHFP).
    @Test(arguments: Spec.categories)
    func everyAcceptedModeWithEveryOption(_ categoryName: String) throws {
        let category = try #require(Category(rawValue: categoryName))
        for modeName in ModeCell.accepted(for: categoryName) {
            let mode = try #require(Mode(rawValue: modeName))
            for (optionName, _) in Spec.optionValues {
                let option = try #require(CategoryOption(rawValue: optionName))
                var options: Set<CategoryOption> = [option]
                var expectAccepted = OptionCell.accepts(optionName, categoryName, mode: modeName)
                if mode == .dualRoute {
                    options.insert(.allowBluetoothHFP)
                    expectAccepted = expectAccepted && OptionCell.accepts("allowBluetoothHFP", categoryName, mode: modeName)
                }
                let result = Result { () throws(SessionError) in
                    try SessionConfiguration.validated(category: category, mode: mode, options: options)
                }
                switch result {
                case .success(let configuration):
                    #expect(expectAccepted, "\(categoryName)/\(modeName)/\(optionName) accepted, spec rejects it")
                    #expect(configuration.requestedOptions == options)
                case .failure(let error):
                    #expect(!expectAccepted, "\(categoryName)/\(modeName)/\(optionName) rejected: \(error)")
                    #expect(error.code == .badParam)
                }
            }
        }
    }

    /// All options a category accepts, at once, in its default mode (multiRoute: dualRoute).
    @Test(arguments: Spec.categories)
    func allAcceptedOptionsTogether(_ categoryName: String) throws {
        let category = try #require(Category(rawValue: categoryName))
        let mode: Mode = category == .multiRoute ? .dualRoute : .default
        let names = OptionCell.all.filter { $0.category == categoryName && $0.verdict != .rejected }.map(\.option)
        let options = Set(try names.map { try #require(CategoryOption(rawValue: $0)) })
        let configuration = try SessionConfiguration.validated(category: category, mode: mode, options: options)
        #expect(configuration.requestedOptions == options)
        #expect(configuration.effectiveOptions.isSuperset(of: options))
    }

    @Test func upstreamRawValues() throws {
        for (name, value) in Spec.optionValues {
            let option = try #require(CategoryOption(rawValue: name))
            #expect(option.upstreamValue == value, "\(name)")
        }
    }

    struct CategoryRow: Sendable, CustomTestStringConvertible {
        let name: String
        let input: Bool
        let output: Bool
        let mixableByDefault: Bool
        var testDescription: String { name }
        static let all: [CategoryRow] = Spec.rows(Spec.categoryTable).dropFirst().map {
            CategoryRow(
                name: $0[0], input: $0[1].hasPrefix("yes"), output: $0[2].hasPrefix("yes"),
                mixableByDefault: $0[3].hasPrefix("yes"))
        }
    }

    @Test(arguments: CategoryRow.all)
    func categoryCapabilities(_ row: CategoryRow) throws {
        let category = try #require(Category(rawValue: row.name))
        #expect(category.hasInput == row.input)
        #expect(category.hasOutput == row.output)
        let configuration = try SessionConfiguration.validated(category: category)
        #expect(configuration.isMixable == row.mixableByDefault)
        #expect(configuration.effectiveOptions.contains(.mixWithOthers) == row.mixableByDefault)
    }
}

@Suite("SPEC §1 rules: implied options, modes' side effects, policies, parsing")
struct ConfigurationRuleTests {
    struct ImpliedCase: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let requested: Set<CategoryOption>
        let effective: Set<CategoryOption>
        var testDescription: String { "\(category)/\(mode) \(requested.map(\.rawValue).sorted())" }
    }

    static let impliedCases: [ImpliedCase] = [
        .init(category: .ambient, mode: .default, requested: [], effective: [.mixWithOthers]),
        .init(category: .ambient, mode: .spokenAudio, requested: [.duckOthers], effective: [.duckOthers, .mixWithOthers]),
        .init(category: .soloAmbient, mode: .default, requested: [], effective: []),
        .init(category: .playback, mode: .default, requested: [], effective: []),
        .init(category: .playback, mode: .default, requested: [.duckOthers], effective: [.duckOthers, .mixWithOthers]),
        .init(
            category: .playback, mode: .spokenAudio, requested: [.interruptSpokenAudioAndMixWithOthers],
            effective: [.interruptSpokenAudioAndMixWithOthers, .mixWithOthers]),
        .init(category: .record, mode: .default, requested: [.duckOthers], effective: [.duckOthers, .mixWithOthers]),
        .init(
            category: .record, mode: .default, requested: [.interruptSpokenAudioAndMixWithOthers],
            effective: [.interruptSpokenAudioAndMixWithOthers, .mixWithOthers]),
        .init(category: .record, mode: .default, requested: [.mixWithOthers], effective: [.mixWithOthers]),
        .init(category: .playAndRecord, mode: .default, requested: [], effective: []),
        .init(category: .playAndRecord, mode: .voiceChat, requested: [], effective: [.allowBluetoothHFP]),
        .init(
            category: .playAndRecord, mode: .voiceChat, requested: [.defaultToSpeaker],
            effective: [.allowBluetoothHFP, .defaultToSpeaker]),
        .init(
            category: .playAndRecord, mode: .videoChat, requested: [],
            effective: [.allowBluetoothHFP, .defaultToSpeaker]),
        .init(
            category: .playAndRecord, mode: .videoChat, requested: [.duckOthers],
            effective: [.duckOthers, .mixWithOthers, .allowBluetoothHFP, .defaultToSpeaker]),
        .init(category: .playAndRecord, mode: .measurement, requested: [], effective: []),
        .init(category: .multiRoute, mode: .dualRoute, requested: [.allowBluetoothHFP], effective: [.allowBluetoothHFP]),
        .init(
            category: .multiRoute, mode: .default, requested: [.interruptSpokenAudioAndMixWithOthers],
            effective: [.interruptSpokenAudioAndMixWithOthers, .mixWithOthers]),
    ]

    @Test(arguments: impliedCases)
    func effectiveOptions(_ c: ImpliedCase) throws {
        let configuration = try SessionConfiguration.validated(category: c.category, mode: c.mode, options: c.requested)
        #expect(configuration.requestedOptions == c.requested)
        #expect(configuration.effectiveOptions == c.effective)
        #expect(configuration.isMixable == c.effective.contains(.mixWithOthers))
        #expect(Set(configuration.effectiveOptionNames) == Set(c.effective.map(\.rawValue)))
    }

    struct HighQualityCase: Sendable, CustomTestStringConvertible {
        let category: String
        let mode: String
        var testDescription: String { "\(category)/\(mode)" }
    }

    /// bluetoothHighQualityRecording in every (category, mode) that accepts it.
    static let highQualityCases: [HighQualityCase] = Spec.categories.flatMap { category in
        ModeCell.accepted(for: category)
            .filter { OptionCell.accepts("bluetoothHighQualityRecording", category, mode: $0) }
            .map { HighQualityCase(category: category, mode: $0) }
    }

    @Test(arguments: highQualityCases)
    func bluetoothHighQualityRecordingOnlyInModeDefault(_ c: HighQualityCase) throws {
        let category = try #require(Category(rawValue: c.category))
        let mode = try #require(Mode(rawValue: c.mode))
        var options: Set<CategoryOption> = [.bluetoothHighQualityRecording]
        if mode == .dualRoute { options.insert(.allowBluetoothHFP) }
        // Accepted in every mode ...
        let configuration = try SessionConfiguration.validated(category: category, mode: mode, options: options)
        // ... in force only in mode default, and reported as ignored elsewhere.
        #expect(configuration.wantsHighQualityBluetooth == (mode == .default))
        let ignored = configuration.ignoredOptions
        if mode == .default {
            #expect(ignored.isEmpty)
        } else {
            #expect(ignored.map(\.option) == [.bluetoothHighQualityRecording])
            #expect(ignored.allSatisfy { $0.why.contains("default") })
        }
    }

    @Test func nothingIgnoredWithoutHighQualityRecording() throws {
        for (category, mode) in [(Category.playAndRecord, Mode.voiceChat), (.record, .measurement), (.playback, .voicePrompt)] {
            let configuration = try SessionConfiguration.validated(category: category, mode: mode, options: [.duckOthers])
            #expect(configuration.ignoredOptions.isEmpty)
        }
    }

    struct PolicyCase: Sendable, CustomTestStringConvertible {
        let policy: RouteSharingPolicy
        let category: Category
        let mode: Mode
        let options: Set<CategoryOption>
        let accepted: Bool
        var testDescription: String {
            "\(policy) with \(category)/\(mode) \(options.map(\.rawValue).sorted()) → \(accepted ? "ok" : "badParam")"
        }
    }

    static let policyCases: [PolicyCase] = {
        var cases: [PolicyCase] = []
        for policy in [RouteSharingPolicy.longFormAudio, .longFormVideo] {
            for mode in [Mode.default, .moviePlayback, .spokenAudio] {
                cases.append(.init(policy: policy, category: .playback, mode: mode, options: [], accepted: true))
                cases.append(.init(policy: policy, category: .playback, mode: mode, options: [.mixWithOthers], accepted: false))
            }
            for mode in [Mode.measurement, .shortFormVideo, .voicePrompt] {
                cases.append(.init(policy: policy, category: .playback, mode: mode, options: [], accepted: false))
            }
            for option in [CategoryOption.duckOthers, .interruptSpokenAudioAndMixWithOthers, .overrideMutedMicrophoneInterruption] {
                cases.append(.init(policy: policy, category: .playback, mode: .default, options: [option], accepted: false))
            }
            for category in [Category.ambient, .soloAmbient, .record, .playAndRecord, .multiRoute] {
                cases.append(.init(policy: policy, category: category, mode: .default, options: [], accepted: false))
            }
            cases.append(.init(policy: policy, category: .ambient, mode: .spokenAudio, options: [], accepted: false))
        }
        for category in [Category.playback, .soloAmbient, .playAndRecord] {
            cases.append(.init(policy: .independent, category: category, mode: .default, options: [], accepted: false))
        }
        cases.append(.init(policy: .default, category: .playback, mode: .default, options: [.mixWithOthers], accepted: true))
        cases.append(.init(policy: .default, category: .record, mode: .measurement, options: [], accepted: true))
        return cases
    }()

    @Test(arguments: policyCases)
    func routeSharingPolicy(_ c: PolicyCase) throws {
        if c.accepted {
            let configuration = try SessionConfiguration.validated(
                category: c.category, mode: c.mode, options: c.options, policy: c.policy)
            #expect(configuration.policy == c.policy)
        } else {
            expectError(.badParam, mentioning: [c.policy.rawValue]) {
                _ = try SessionConfiguration.validated(category: c.category, mode: c.mode, options: c.options, policy: c.policy)
            }
        }
    }

    // MARK: Wire names

    @Test(arguments: Spec.categories)
    func categoryWireNames(_ name: String) throws {
        #expect(try Vocabulary.category(name).rawValue == name)
    }

    @Test(arguments: Spec.modes)
    func modeWireNames(_ name: String) throws {
        #expect(try Vocabulary.mode(name).rawValue == name)
    }

    @Test(arguments: Spec.optionValues.map(\.name))
    func optionWireNames(_ name: String) throws {
        #expect(try Vocabulary.option(name).rawValue == name)
        #expect(CategoryOption(wireName: name)?.rawValue == name)
    }

    @Test func allowBluetoothIsAnAliasOfAllowBluetoothHFP() throws {
        #expect(try Vocabulary.option("allowBluetooth") == .allowBluetoothHFP)
        #expect(CategoryOption(wireName: "allowBluetooth") == .allowBluetoothHFP)
        // The alias is accepted wherever allowBluetoothHFP is.
        let option = try Vocabulary.option("allowBluetooth")
        let configuration = try SessionConfiguration.validated(category: .record, options: [option])
        #expect(configuration.effectiveOptions == [.allowBluetoothHFP])
    }

    @Test(arguments: ["default", "longFormAudio", "longFormVideo", "independent"])
    func policyWireNames(_ name: String) throws {
        #expect(try Vocabulary.policy(name).rawValue == name)
    }

    @Test func audioProcessingIsRejected() {
        expectError(.badParam, mentioning: ["audioProcessing"]) { _ = try Vocabulary.category("audioProcessing") }
    }

    struct BadName: Sendable, CustomTestStringConvertible {
        let kind: String
        let name: String
        var testDescription: String { "\(kind) \"\(name)\"" }
    }

    static let badNames: [BadName] = [
        .init(kind: "category", name: "PlayAndRecord"), .init(kind: "category", name: ""),
        .init(kind: "category", name: "soloambient"), .init(kind: "mode", name: "voicechat"),
        .init(kind: "mode", name: "videoCall"), .init(kind: "option", name: "allowBluetoothhfp"),
        .init(kind: "option", name: "mixwithothers"), .init(kind: "option", name: "0x1"),
        .init(kind: "policy", name: "longForm"), .init(kind: "policy", name: "Default"),
    ]

    @Test(arguments: badNames)
    func unknownWireNamesAreBadParamNamingThem(_ bad: BadName) {
        expectError(.badParam, mentioning: ["\"\(bad.name)\""]) {
            switch bad.kind {
            case "category": _ = try Vocabulary.category(bad.name)
            case "mode": _ = try Vocabulary.mode(bad.name)
            case "option": _ = try Vocabulary.option(bad.name)
            default: _ = try Vocabulary.policy(bad.name)
            }
        }
    }

    // MARK: In the store

    @Test func optionsAreNotSticky() throws {
        var store = SessionStore.fixture()
        store.add("app", .playAndRecord, .default, [.duckOthers, .defaultToSpeaker, .allowBluetoothA2DP])
        #expect(
            store.sessions["app"]?.configuration.effectiveOptions
                == [.duckOthers, .mixWithOthers, .defaultToSpeaker, .allowBluetoothA2DP])
        store.add("app", .playback)
        #expect(store.sessions["app"]?.configuration.requestedOptions == [])
        #expect(store.sessions["app"]?.configuration.effectiveOptions == [])
        store.add("app", .playAndRecord, .voiceChat)
        #expect(store.sessions["app"]?.configuration.requestedOptions == [])
        #expect(store.sessions["app"]?.configuration.effectiveOptions == [.allowBluetoothHFP])
        store.add("app", .playAndRecord, .default, [.allowAirPlay])
        #expect(store.sessions["app"]?.configuration.effectiveOptions == [.allowAirPlay])
    }

    struct BadConfiguration: Sendable, CustomTestStringConvertible {
        let category: Category
        let mode: Mode
        let options: Set<CategoryOption>
        let policy: RouteSharingPolicy
        var testDescription: String { "\(category)/\(mode) \(options.map(\.rawValue).sorted()) \(policy)" }
    }

    static let badConfigurations: [BadConfiguration] = [
        .init(category: .record, mode: .spokenAudio, options: [], policy: .default),
        .init(category: .playAndRecord, mode: .default, options: [.allowAirPlay, .defaultToSpeaker, .duckOthers, .allowBluetoothA2DP, .overrideMutedMicrophoneInterruption, .allowBluetoothHFP, .mixWithOthers, .bluetoothHighQualityRecording, .interruptSpokenAudioAndMixWithOthers], policy: .longFormAudio),
        .init(category: .ambient, mode: .default, options: [.mixWithOthers, .defaultToSpeaker], policy: .default),
        .init(category: .multiRoute, mode: .dualRoute, options: [], policy: .default),
        .init(category: .multiRoute, mode: .default, options: [.allowBluetoothHFP], policy: .default),
        .init(category: .playback, mode: .gameChat, options: [], policy: .default),
        .init(category: .playback, mode: .default, options: [], policy: .independent),
    ]

    /// A rejected configuration changes nothing: the session keeps its previous one whole.
    @Test(arguments: badConfigurations)
    func rejectedConfigurationChangesNothing(_ bad: BadConfiguration) throws {
        var store = SessionStore.fixture()
        store.add("app", .playAndRecord, .voiceChat, [.defaultToSpeaker, .duckOthers])
        _ = try store.activate(app: "app")
        let before = StoreSnapshot(store)
        let error = expectError(.badParam) {
            let configuration = try SessionConfiguration.validated(
                category: bad.category, mode: bad.mode, options: bad.options, policy: bad.policy)
            _ = try store.configure(app: "app", ownerUID: testUID, configuration: configuration)
        }
        #expect(error != nil)
        #expect(StoreSnapshot(store) == before)
    }
}
