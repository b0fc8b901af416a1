// The session object of replies and status (docs/protocol.md, "Session object").
import SessionPolicy

/// A session's route: its input and output ports, by name.
public struct RouteInfo: ReplyObject {
    public var inputs: [String]
    public var outputs: [String]

    public init(inputs: [String] = [], outputs: [String] = []) {
        self.inputs = inputs
        self.outputs = outputs
    }

    public var json: JSONValue { ["inputs": JSONValue(inputs), "outputs": JSONValue(outputs)] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a route")
        self.init(inputs: try f.strings("inputs"), outputs: try f.strings("outputs"))
    }
}

/// A port as a route or `availableInputs` describes it (AVAudioSessionPortDescription):
/// its configured name, its port type and its channel count on the side the route uses.
public struct PortDescriptionInfo: ReplyObject {
    public var name: String
    public var type: String
    public var channels: Int

    public init(name: String, type: String, channels: Int) {
        self.name = name
        self.type = type
        self.channels = channels
    }

    public var json: JSONValue {
        ["name": .string(name), "type": .string(type), "channels": .number(Double(channels))]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a port description")
        self.init(name: try f.string("name"), type: try f.string("type"), channels: try f.int("channels"))
    }
}

/// A route with its ports described (AVAudioSessionRouteDescription): `routeDescription` and
/// `previousRouteDescription` beside the plain `route` of names.
public struct RouteDescriptionInfo: ReplyObject {
    public var inputs: [PortDescriptionInfo]
    public var outputs: [PortDescriptionInfo]

    public init(inputs: [PortDescriptionInfo] = [], outputs: [PortDescriptionInfo] = []) {
        self.inputs = inputs
        self.outputs = outputs
    }

    public var json: JSONValue { ["inputs": .array(inputs.map(\.json)), "outputs": .array(outputs.map(\.json))] }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a route description")
        self.init(inputs: try f.list("inputs"), outputs: try f.list("outputs"))
    }
}

/// One session as recd reports it. Required: `app`, `category`, `mode`, `options`, `state`,
/// `route` (what the session is and where it plays: a client cannot show it or apply it again
/// without them); the rest is nil (unknown), empty or false when a reply lacks it.
public struct SessionInfo: ReplyObject {
    /// An option the session asked for that does not apply, and why.
    public struct IgnoredOption: ReplyObject {
        public var option: String
        public var why: String

        public init(option: String, why: String) {
            self.option = option
            self.why = why
        }

        public var json: JSONValue { ["option": .string(option), "why": .string(why)] }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "an ignored option")
            self.init(option: try f.string("option"), why: try f.string("why"))
        }
    }

    /// Why the session is interrupted, by whom (an app or a port; nil for a route loss) and
    /// since when (ISO 8601, UTC; nil when recd did not see it begin: before a restart).
    public struct Interruption: ReplyObject {
        public var reason: String
        public var by: String?
        public var since: String?

        public init(reason: String, by: String?, since: String? = nil) {
            self.reason = reason
            self.by = by
            self.since = since
        }

        public var json: JSONValue { ["reason": .string(reason), "by": JSONValue(by), "since": JSONValue(since)] }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "an interruption")
            self.init(
                reason: try f.string("reason"), by: try f.optionalString("by"), since: try f.optionalString("since"))
        }
    }

    /// The audio bandwidth of one port of the route (`full`, `hfp-cvsd`, `hfp-msbc`).
    public struct PortBandwidth: ReplyObject {
        public var port: String
        public var bandwidth: String

        public init(port: String, bandwidth: String) {
            self.port = port
            self.bandwidth = bandwidth
        }

        public var json: JSONValue { ["port": .string(port), "bandwidth": .string(bandwidth)] }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "a bandwidth")
            self.init(port: try f.string("port"), bandwidth: try f.string("bandwidth"))
        }
    }

    /// The hardware preferences the session set (nil: none).
    public typealias Preferences = HardwarePreferences

    /// What JACK reports of the hardware for the session's route (nil: unknown).
    public struct Actual: ReplyObject {
        public var sampleRate: Double?
        public var ioBufferDuration: Double?
        public var inputLatency: Double?
        public var outputLatency: Double?
        public var inputChannels: Int?
        public var outputChannels: Int?

        public init(
            sampleRate: Double? = nil, ioBufferDuration: Double? = nil, inputLatency: Double? = nil,
            outputLatency: Double? = nil, inputChannels: Int? = nil, outputChannels: Int? = nil
        ) {
            self.sampleRate = sampleRate
            self.ioBufferDuration = ioBufferDuration
            self.inputLatency = inputLatency
            self.outputLatency = outputLatency
            self.inputChannels = inputChannels
            self.outputChannels = outputChannels
        }

        public var json: JSONValue {
            [
                "sampleRate": JSONValue(sampleRate), "ioBufferDuration": JSONValue(ioBufferDuration),
                "inputLatency": JSONValue(inputLatency), "outputLatency": JSONValue(outputLatency),
                "inputChannels": JSONValue(inputChannels), "outputChannels": JSONValue(outputChannels),
            ]
        }

        public init(json: JSONValue) throws(ReplyDecodingError) {
            let f = try ReplyFields(json, "actual hardware")
            self.init(
                sampleRate: try f.optionalDouble("sampleRate"),
                ioBufferDuration: try f.optionalDouble("ioBufferDuration"),
                inputLatency: try f.optionalDouble("inputLatency"),
                outputLatency: try f.optionalDouble("outputLatency"),
                inputChannels: try f.optionalInt("inputChannels"), outputChannels: try f.optionalInt("outputChannels"))
        }
    }

    public var app: String
    public var ownerUID: Int?
    public var category: String
    public var mode: String
    /// Effective options, implied ones included.
    public var options: [String]
    public var requestedOptions: [String]
    public var ignoredOptions: [IgnoredOption]
    public var policy: String?
    public var priority: String?
    public var background: Bool
    public var autoResume: Bool
    public var micUsage: String?
    public var preferences: Preferences
    public var recordPermission: String?
    public var inputMuted: Bool
    public var declaredInConfig: Bool
    /// Its own choices beyond its category (interruption preferences, echo-cancelled input,
    /// the output override).
    public var choices: Choices
    /// Where it plays and records, and what the ports there offer.
    public var routing: Routing
    /// What the arbiter made of it: active or not, held, interrupted, ducked, and what plays.
    public var activity: Activity

    /// A session's own choices beyond its category, as AVAudioSession names them.
    public struct Choices: Equatable, Sendable {
        /// `speaker` or `none`.
        public var override: String?
        public var prefersInterruptionOnRouteDisconnect: Bool
        /// System-alert-class sessions do not interrupt it (docs/protocol.md).
        public var prefersNoInterruptionsFromSystemAlerts: Bool
        /// AVAudioSession's prefersEchoCancelledInput (docs/voice-processing.md); false from a
        /// recd that predates it.
        public var prefersEchoCancelledInput: Bool
    }

    /// A session's route and what its ports offer.
    public struct Routing: Equatable, Sendable {
        public var route: RouteInfo
        /// The route's ports with their type and channels.
        public var routeDescription: RouteDescriptionInfo
        /// The input ports the session may use now (its category and options allowing).
        public var availableInputs: [PortDescriptionInfo]
        public var bandwidth: [PortBandwidth]
        public var actual: Actual
        /// The channels of the route's input and output ports (0: none): the most a preferred
        /// channel count gets.
        public var maximumInputChannels: Int?
        public var maximumOutputChannels: Int?
        /// AVAudioSession's isEchoCancelledInputAvailable; false from a recd that predates it.
        public var isEchoCancelledInputAvailable: Bool
    }

    /// What the arbiter made of a session, and what it hears of the others.
    public struct Activity: Equatable, Sendable {
        /// `inactive`, `active` or `interrupted`.
        public var state: String
        /// The pid of the application process whose activation this is (`session.activate`
        /// with `hold`); nil when no process holds it (recctl, the config): such activations
        /// persist.
        public var heldBy: Int?
        public var interruption: Interruption?
        public var duckedBy: String?
        public var streamsRunning: Bool
        /// Another session's players play.
        public var isOtherAudioPlaying: Bool
        /// Another session whose audio is primary (non-mixable) plays.
        public var secondaryAudioShouldBeSilencedHint: Bool
    }

    // The groups' members by their AVAudioSession-like names, as the wire object has them.
    public var override: String? {
        get { choices.override }
        set { choices.override = newValue }
    }
    public var prefersInterruptionOnRouteDisconnect: Bool {
        get { choices.prefersInterruptionOnRouteDisconnect }
        set { choices.prefersInterruptionOnRouteDisconnect = newValue }
    }
    public var prefersNoInterruptionsFromSystemAlerts: Bool {
        get { choices.prefersNoInterruptionsFromSystemAlerts }
        set { choices.prefersNoInterruptionsFromSystemAlerts = newValue }
    }
    public var prefersEchoCancelledInput: Bool {
        get { choices.prefersEchoCancelledInput }
        set { choices.prefersEchoCancelledInput = newValue }
    }
    public var route: RouteInfo {
        get { routing.route }
        set { routing.route = newValue }
    }
    public var routeDescription: RouteDescriptionInfo {
        get { routing.routeDescription }
        set { routing.routeDescription = newValue }
    }
    public var availableInputs: [PortDescriptionInfo] {
        get { routing.availableInputs }
        set { routing.availableInputs = newValue }
    }
    public var bandwidth: [PortBandwidth] {
        get { routing.bandwidth }
        set { routing.bandwidth = newValue }
    }
    public var actual: Actual {
        get { routing.actual }
        set { routing.actual = newValue }
    }
    public var maximumInputChannels: Int? {
        get { routing.maximumInputChannels }
        set { routing.maximumInputChannels = newValue }
    }
    public var maximumOutputChannels: Int? {
        get { routing.maximumOutputChannels }
        set { routing.maximumOutputChannels = newValue }
    }
    public var isEchoCancelledInputAvailable: Bool {
        get { routing.isEchoCancelledInputAvailable }
        set { routing.isEchoCancelledInputAvailable = newValue }
    }
    public var state: String {
        get { activity.state }
        set { activity.state = newValue }
    }
    public var heldBy: Int? {
        get { activity.heldBy }
        set { activity.heldBy = newValue }
    }
    public var interruption: Interruption? {
        get { activity.interruption }
        set { activity.interruption = newValue }
    }
    public var duckedBy: String? {
        get { activity.duckedBy }
        set { activity.duckedBy = newValue }
    }
    public var streamsRunning: Bool {
        get { activity.streamsRunning }
        set { activity.streamsRunning = newValue }
    }
    public var isOtherAudioPlaying: Bool {
        get { activity.isOtherAudioPlaying }
        set { activity.isOtherAudioPlaying = newValue }
    }
    public var secondaryAudioShouldBeSilencedHint: Bool {
        get { activity.secondaryAudioShouldBeSilencedHint }
        set { activity.secondaryAudioShouldBeSilencedHint = newValue }
    }

    public init(
        app: String, ownerUID: Int?, category: String, mode: String, options: [String], requestedOptions: [String],
        ignoredOptions: [IgnoredOption], policy: String?, priority: String?, background: Bool, autoResume: Bool,
        micUsage: String?, state: String, interruption: Interruption?, route: RouteInfo, bandwidth: [PortBandwidth],
        preferences: Preferences, actual: Actual, recordPermission: String?, inputMuted: Bool, duckedBy: String?,
        override: String?, prefersInterruptionOnRouteDisconnect: Bool, streamsRunning: Bool, declaredInConfig: Bool,
        routeDescription: RouteDescriptionInfo = .init(), availableInputs: [PortDescriptionInfo] = [],
        maximumInputChannels: Int? = 0, maximumOutputChannels: Int? = 0, isOtherAudioPlaying: Bool = false,
        secondaryAudioShouldBeSilencedHint: Bool = false, heldBy: Int? = nil,
        prefersNoInterruptionsFromSystemAlerts: Bool = false, prefersEchoCancelledInput: Bool = false,
        isEchoCancelledInputAvailable: Bool = false
    ) {
        self.app = app
        self.ownerUID = ownerUID
        self.category = category
        self.mode = mode
        self.options = options
        self.requestedOptions = requestedOptions
        self.ignoredOptions = ignoredOptions
        self.policy = policy
        self.priority = priority
        self.background = background
        self.autoResume = autoResume
        self.micUsage = micUsage
        self.preferences = preferences
        self.recordPermission = recordPermission
        self.inputMuted = inputMuted
        self.declaredInConfig = declaredInConfig
        choices = Choices(
            override: override, prefersInterruptionOnRouteDisconnect: prefersInterruptionOnRouteDisconnect,
            prefersNoInterruptionsFromSystemAlerts: prefersNoInterruptionsFromSystemAlerts,
            prefersEchoCancelledInput: prefersEchoCancelledInput)
        routing = Routing(
            route: route, routeDescription: routeDescription, availableInputs: availableInputs, bandwidth: bandwidth,
            actual: actual, maximumInputChannels: maximumInputChannels, maximumOutputChannels: maximumOutputChannels,
            isEchoCancelledInputAvailable: isEchoCancelledInputAvailable)
        activity = Activity(
            state: state, heldBy: heldBy, interruption: interruption, duckedBy: duckedBy,
            streamsRunning: streamsRunning, isOtherAudioPlaying: isOtherAudioPlaying,
            secondaryAudioShouldBeSilencedHint: secondaryAudioShouldBeSilencedHint)
    }

    public var json: JSONValue {
        [
            "app": .string(app), "ownerUID": JSONValue(ownerUID), "category": .string(category),
            "mode": .string(mode), "options": JSONValue(options), "requestedOptions": JSONValue(requestedOptions),
            "ignoredOptions": .array(ignoredOptions.map(\.json)), "policy": JSONValue(policy),
            "priority": JSONValue(priority), "background": .bool(background), "autoResume": .bool(autoResume),
            "micUsage": JSONValue(micUsage), "state": .string(state), "heldBy": JSONValue(heldBy),
            "interruption": interruption?.json ?? .null,
            "route": route.json, "routeDescription": routeDescription.json,
            "availableInputs": .array(availableInputs.map(\.json)), "bandwidth": .array(bandwidth.map(\.json)),
            "preferences": preferences.json, "actual": actual.json,
            "maximumInputChannels": JSONValue(maximumInputChannels),
            "maximumOutputChannels": JSONValue(maximumOutputChannels),
            "recordPermission": JSONValue(recordPermission), "inputMuted": .bool(inputMuted),
            "duckedBy": JSONValue(duckedBy), "override": JSONValue(override),
            "prefersInterruptionOnRouteDisconnect": .bool(prefersInterruptionOnRouteDisconnect),
            "prefersNoInterruptionsFromSystemAlerts": .bool(prefersNoInterruptionsFromSystemAlerts),
            "prefersEchoCancelledInput": .bool(prefersEchoCancelledInput),
            "isEchoCancelledInputAvailable": .bool(isEchoCancelledInputAvailable),
            "streamsRunning": .bool(streamsRunning), "declaredInConfig": .bool(declaredInConfig),
            "isOtherAudioPlaying": .bool(isOtherAudioPlaying),
            "secondaryAudioShouldBeSilencedHint": .bool(secondaryAudioShouldBeSilencedHint),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "a session")
        self.init(
            app: try f.string("app"), ownerUID: try f.optionalInt("ownerUID"), category: try f.string("category"),
            mode: try f.string("mode"), options: try f.strings("options"),
            requestedOptions: try f.optionalStrings("requestedOptions"),
            ignoredOptions: try f.optionalList("ignoredOptions"), policy: try f.optionalString("policy"),
            priority: try f.optionalString("priority"), background: try f.flag("background"),
            autoResume: try f.flag("autoResume"), micUsage: try f.optionalString("micUsage"),
            state: try f.string("state"), interruption: try f.optionalObject("interruption"),
            route: try f.object("route"), bandwidth: try f.optionalList("bandwidth"),
            preferences: try f.optionalObject("preferences") ?? .init(),
            actual: try f.optionalObject("actual") ?? .init(),
            recordPermission: try f.optionalString("recordPermission"), inputMuted: try f.flag("inputMuted"),
            duckedBy: try f.optionalString("duckedBy"), override: try f.optionalString("override"),
            prefersInterruptionOnRouteDisconnect: try f.flag("prefersInterruptionOnRouteDisconnect"),
            streamsRunning: try f.flag("streamsRunning"), declaredInConfig: try f.flag("declaredInConfig"),
            routeDescription: try f.optionalObject("routeDescription") ?? .init(),
            availableInputs: try f.optionalList("availableInputs"),
            maximumInputChannels: try f.optionalInt("maximumInputChannels"),
            maximumOutputChannels: try f.optionalInt("maximumOutputChannels"),
            isOtherAudioPlaying: try f.flag("isOtherAudioPlaying"),
            secondaryAudioShouldBeSilencedHint: try f.flag("secondaryAudioShouldBeSilencedHint"),
            heldBy: try f.optionalInt("heldBy"),
            prefersNoInterruptionsFromSystemAlerts: try f.flag("prefersNoInterruptionsFromSystemAlerts"),
            prefersEchoCancelledInput: try f.flag("prefersEchoCancelledInput"),
            isEchoCancelledInputAvailable: try f.flag("isEchoCancelledInputAvailable"))
    }
}

extension HardwarePreferences: ReplyObject {
    public var json: JSONValue {
        [
            "preferredInput": JSONValue(preferredInput), "sampleRate": JSONValue(sampleRate),
            "ioBufferDuration": JSONValue(ioBufferDuration), "inputChannels": JSONValue(inputChannels),
            "outputChannels": JSONValue(outputChannels),
        ]
    }

    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "preferences")
        self.init(
            preferredInput: try f.optionalString("preferredInput"), sampleRate: try f.optionalDouble("sampleRate"),
            ioBufferDuration: try f.optionalDouble("ioBufferDuration"),
            inputChannels: try f.optionalInt("inputChannels"), outputChannels: try f.optionalInt("outputChannels"))
    }
}

/// `session.list`'s reply: one page of the sessions, by app name. However many sessions recd
/// holds, a reply stays small: a client pages with `offset` until `next` is null.
public struct SessionPage: ReplyObject {
    /// The most sessions one page holds (a request's `limit` is 1...this; none: this).
    public static let maxLimit = 256

    public var sessions: [SessionInfo]
    /// Sessions recd holds in all.
    public var total: Int
    /// The index of this page's first session.
    public var offset: Int
    /// The offset of the next page; nil when this page is the last.
    public var next: Int?

    public init(sessions: [SessionInfo], total: Int, offset: Int, next: Int?) {
        self.sessions = sessions
        self.total = total
        self.offset = offset
        self.next = next
    }

    public var json: JSONValue {
        [
            "sessions": .array(sessions.map(\.json)), "total": .number(Double(total)),
            "offset": .number(Double(offset)), "next": next.map { .number(Double($0)) } ?? .null,
        ]
    }

    /// Decodes a page (required: `sessions`); a reply of a recd older than paging (only
    /// `sessions`) is one whole page.
    public init(json: JSONValue) throws(ReplyDecodingError) {
        let f = try ReplyFields(json, "session.list's reply")
        let sessions: [SessionInfo] = try f.list("sessions")
        self.init(
            sessions: sessions, total: try f.optionalInt("total") ?? sessions.count,
            offset: try f.optionalInt("offset") ?? 0, next: try f.optionalInt("next"))
    }
}
