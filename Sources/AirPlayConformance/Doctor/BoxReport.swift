import AirPlaySender
import Foundation
import LinuxIO

/// What a box's `GET /diagnostics` says (airplayd's loopback report), read leniently: every
/// field is optional, so a newer or older daemon still gives what it has.
public struct BoxReport: Decodable, Hashable, Sendable {
    /// What the box offers right now.
    public struct Offers: Decodable, Hashable, Sendable {
        /// Audio sessions (RAOP, AirPlay 2) are taken.
        public var audio: Bool?
        /// Video (`/play`) is taken.
        public var video: Bool?
        /// AirPlay 2 (pairing, plist sessions) is on.
        public var airplay2: Bool?
        /// Buffered audio on PTP is offered (only while the PTP follower runs).
        public var bufferedAudio: Bool?
        /// Whether senders' PTP clocks are followed (older daemons leave it out).
        public var ptpTiming: Bool?
        /// Only paired senders may play.
        public var pairingRequired: Bool?
        /// A password protects the box.
        public var passwordRequired: Bool?
    }

    /// Where its mDNS records stand (airplayd's `PublicationStatus`).
    public struct MDNS: Decodable, Hashable, Sendable {
        /// `starting`, `waiting`, `registering`, `established` or `failed`.
        public var state: String?
        /// The name published.
        public var name: String?
        /// The configured name, when a collision made the box take another.
        public var renamedFrom: String?
        /// Why it waits or failed.
        public var reason: String?
        /// How long the state has lasted.
        public var secondsInState: Double?
    }

    /// The PTP clocks the box hears.
    public struct PTP: Decodable, Hashable, Sendable {
        /// One clock heard on UDP 319/320.
        public struct Clock: Decodable, Hashable, Sendable {
            /// Its PTP port identity.
            public var identity: String?
            /// Where it speaks from.
            public var address: String?
            /// Whether the box follows it.
            public var followed: Bool?
            /// Whether it has stopped (an idle Apple sender's frozen clock).
            public var stopped: Bool?
            /// How long since it was last heard.
            public var silentMilliseconds: Double?
            enum CodingKeys: String, CodingKey {
                case identity, address, followed, stopped
                case silentMilliseconds = "silent_ms"
            }
        }
        /// Every clock heard.
        public var clocks: [Clock]?
        /// Our clock's offset to the followed master; null while none is followed.
        public var offsetToSystemClock: Int64?
        enum CodingKeys: String, CodingKey {
            case clocks
            case offsetToSystemClock = "offset_to_system_clock_ns"
        }
    }

    /// A session's packet and clock figures (`/now-playing`'s `stream`).
    public struct Stream: Decodable, Hashable, Sendable {
        /// How the sender's clock is known.
        public struct Clock: Decodable, Hashable, Sendable {
            /// What places frames now: `ptp`, `sender` or `arrival`.
            public var source: String?
            /// What placed most of the frames played.
            public var timedMostlyBy: String?
            /// Syncs out of line with the audio.
            public var implausibleSyncs: Int?
            /// Timing exchanges answered.
            public var exchanges: Int?
            /// Times the timeline jumped.
            public var jumps: Int?
        }
        /// The playout's error against the sender's timeline.
        public struct Sync: Decodable, Hashable, Sendable {
            /// Packets measured.
            public var packets: Int?
            /// 95th percentile of the error, ms.
            public var p95Ms: Double?
            /// Mean error, ms.
            public var meanMs: Double?
        }
        /// What the box's sound card said of its own clock (an output with one: ALSA, an
        /// audio sink).
        public struct Output: Decodable, Hashable, Sendable {
            /// How fast the card's crystal runs off nominal, ppm.
            public var ratePPM: Double?
            /// The uncertainty of that rate, ppm.
            public var rateUncertaintyPPM: Double?
            /// Milliseconds of audio the card held.
            public var delayMs: Double?
            /// Times the card stopped and started again (underruns, reopens).
            public var restarts: Int?
            /// Frames inserted or removed to follow it.
            public var framesCorrected: Int?
        }
        /// L16, ALAC, AAC or AAC-ELD.
        public var codec: String?
        /// Audio packets received (resends included).
        public var received: Int?
        /// Packets never received in time (played as silence).
        public var lost: Int?
        /// Duplicates and packets that came after they were due.
        public var dropped: Int?
        /// Packets skipped whole, meant long before the output got there.
        public var skipped: Int?
        /// Frames written to the output.
        public var framesPlayed: Int?
        /// Times the schedule was re-anchored.
        public var reanchors: Int?
        /// Packets asked for again.
        public var requested: Int?
        /// Requests repeated because the resend did not come.
        public var requestedAgain: Int?
        /// Resends received.
        public var retransmitted: Int?
        /// Worst lateness of the output thread, ms.
        public var worstLatenessMs: Double?
        /// Datagrams that never reached the playout, by kind (`DatagramDrop`).
        public var droppedBeforePlayout: [String: Int]?
        /// The same, in the receiver's words.
        public var dropReasons: [String: Int]?
        /// The sender's clock.
        public var clock: Clock?
        /// The playout's error.
        public var sync: Sync?
        /// The sound card's clock, when the output has one.
        public var output: Output?
    }

    /// A session playing now, or one that ended.
    public struct Session: Decodable, Hashable, Sendable {
        /// The session number.
        public var session: Int?
        /// The sender's address.
        public var sender: String?
        /// What the sender called itself.
        public var senderName: String?
        /// `airplay1`, `airplay2` or `buffered`.
        public var kind: String?
        /// How long it has run (or ran).
        public var seconds: Double?
        /// The setup's phase (a session playing now).
        public var phase: String?
        /// Whether the sender paused it.
        public var paused: Bool?
        /// Why it ended (an ended session).
        public var reason: String?
        /// How long ago it ended.
        public var endedSecondsAgo: Double?
        /// Its figures.
        public var stream: Stream?
    }

    /// What the box's now-playing surfaces show.
    public struct NowPlaying: Decodable, Hashable, Sendable {
        /// `idle`, `playing` or `paused`.
        public var state: String?
        /// The sender's name.
        public var sender: String?
        /// The title playing.
        public var title: String?
        /// The sender's volume in dB: 0 loudest, -30 softest, -144 muted.
        public var volume: Double?
    }

    /// The box's name.
    public var name: String?
    /// Its device ID (`AA:BB:…`).
    public var deviceID: String?
    /// What it offers.
    public var offers: Offers?
    /// Its mDNS records.
    public var mdns: MDNS?
    /// The PTP clocks it hears (null when PTP is not running).
    public var ptp: PTP?
    /// Why the PTP follower could not start, when it was meant to.
    public var ptpUnavailable: String?
    /// Its now-playing state.
    public var nowPlaying: NowPlaying?
    /// The session playing now.
    public var session: Session?
    /// The last sessions that ended, newest first.
    public var sessions: [Session]?
    /// Sources locked out of pair-setup now, after failed PINs.
    public var pairingLockouts: [PairingLockout]?

    /// A source locked out of pair-setup.
    public struct PairingLockout: Decodable, Hashable, Sendable {
        /// An IPv4 address or an IPv6 /64.
        public var source: String
        /// Its failed setups remembered.
        public var failures: Int
        /// Seconds until it may try again.
        public var seconds: Int
    }

    /// Reads a report from `GET /diagnostics`'s body.
    public init(json: [UInt8]) throws {
        self = try JSONDecoder().decode(BoxReport.self, from: Data(json))
    }
}
